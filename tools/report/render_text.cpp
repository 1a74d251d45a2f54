// The text report, in LeakSanitizer's shape so that people and existing CI parsers read it
// without learning anything new.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "renderers.h"
#include "resource_rules.h"
#include "suppressions.h"

namespace leaseguard::report {
namespace {

std::string command_line(const ProcessReport &process) {
  std::string text;
  for (const std::string &argument : process.command) {
    if (!text.empty()) text.push_back(' ');
    text += argument;
  }
  return text.empty() ? process.executable : text;
}

std::string how_it_ended(const ProcessReport &process) {
  if (process.exec_replaced) return "replaced its image with exec";
  if (process.exit_signal) return "was killed by signal " + std::to_string(*process.exit_signal);
  if (process.exit_code) return "exited with code " + std::to_string(*process.exit_code);
  return process.complete ? "exited" : "ended without ending its leases";
}

void render_frame(std::string &out, size_t index, const Frame &frame) {
  out += "    #" + std::to_string(index) + " " + hex_address(frame.address);
  if (frame.function) out += " in " + *frame.function;
  if (frame.file) {
    out += " " + *frame.file;
    if (frame.line) out += ":" + std::to_string(*frame.line);
  }
  if (frame.module.empty()) out += " (<unknown module>)";
  else out += " (" + frame.module + "+" + hex_address(frame.offset) + ")";
  out += "\n";
}

void render_stack(std::string &out, const ProcessReport &process, uint32_t stack_id) {
  const StackView stack = process.stack(stack_id);
  if (stack_id == 0 || stack.empty()) {
    out += "    <no stack recorded>\n";
    return;
  }
  for (size_t i = 0; i < stack.size(); ++i) render_frame(out, i, stack[i]);
}

std::string milliseconds(double ms) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", ms);
  return buffer;
}

std::string lease_details(const LeaseEnding &lease) {
  std::string text = "policy " + std::string(policy_name(lease.policy));
  if (lease.ttl_ms != 0) text += ", ttl " + std::to_string(lease.ttl_ms) + " ms";
  text += ", began at " + milliseconds(lease.begin_ms) + ", peak " + std::to_string(lease.peak_bytes) + " byte(s)";
  if (!lease.late_frees.empty()) text += ", " + std::to_string(lease.late_frees.size()) + " late free(s)";
  return text;
}

}  // namespace

std::string render_text(const Report &report) {
  std::string out;
  render_text(report, [&](std::string_view piece) { out.append(piece); });
  return out;
}

void render_text(const Report &report, const JsonWriter::Spill &spill) {
  std::string out;
  // Handed over once it holds kSpillBytes: after each leak group, late free or double free.
  auto hand_over_if_full = [&] {
    if (out.size() < JsonWriter::kSpillBytes) return;
    spill(out);
    out.clear();
  };
  for (const ProcessReport &process : report.processes) {
    bool any_late_free = false;
    for (const LeaseEnding &lease : process.leases) any_late_free = any_late_free || !lease.late_frees.empty();
    if (process.leaked_allocations() == 0 && !any_late_free && process.double_frees.empty()) continue;
    std::string tag = "==" + std::to_string(process.pid) + "==";
    out += "\n" + tag + "ERROR: leaseguard: detected device memory leaks\n";
    out += tag + "process " + std::to_string(process.pid) + " (" + command_line(process) + ") " +
           how_it_ended(process) + "\n";
    if (!process.complete)
      out += tag + "the process died before it could end its leases; its live allocations are reported from the journal\n";
    for (const LeaseEnding &lease : process.leases) {
      if (lease.leaked_allocations() == 0 && lease.late_frees.empty()) continue;
      out += "\n" + tag + "lease " + std::to_string(lease.id) + " \"" + lease.name + "\" (" + lease_details(lease) +
             ") ended by " + std::string(ended_by_name(lease.ended_by)) +
             (lease.signal != 0 ? " (signal " + std::to_string(lease.signal) + ")" : "") + " at " +
             milliseconds(lease.end_ms) + ": " +
             std::to_string(lease.leaked_bytes()) + " byte(s) in " + std::to_string(lease.leaked_allocations()) +
             " allocation(s)\n";
      if (lease.unjournaled_allocations != 0)
        out += "\nLeak of " + std::to_string(lease.unjournaled_bytes) + " byte(s) in " +
               std::to_string(lease.unjournaled_allocations) +
               " allocation(s) made while the journal was full: no stack or entry point was recorded for them\n";
      std::vector<LeakGroup> groups = group_leaks(process, lease);
      const size_t shown = report.max_groups != 0 && groups.size() > report.max_groups ? report.max_groups : groups.size();
      for (size_t index = 0; index < shown; ++index) {
        const LeakGroup &group = groups[index];
        out += "\nLeak of " + std::to_string(group.bytes) + " byte(s) in " + std::to_string(group.allocations) +
               " allocation(s) [" + std::string(api_name(group.api)) + ", " + describe(group.api, group.kind) +
               ", device " + std::to_string(group.device) +
               (group.reclaimed ? ", reclaimed" : "") + "] allocated from:\n";
        render_stack(out, process, group.stack_id);
        if (report.suggest_suppressions) {
          std::string rule = suggest_suppression(process, group.stack_id);
          if (!rule.empty()) out += "  Suppress with: " + rule + "\n";
        }
        hand_over_if_full();
      }
      if (shown < groups.size()) out += "\n(omitting " + std::to_string(groups.size() - shown) + " more leak group(s))\n";
      for (const LateFree &late : lease.late_frees) {
        out += "\nLate free of " + hex_address(late.address) + " [" + std::string(api_name(late.api)) + "] at " +
               milliseconds(late.time_ms) + (late.forwarded ? "" : ", reclaimed memory: not passed to the driver") +
               ", from:\n";
        render_stack(out, process, late.stack_id);
        hand_over_if_full();
      }
    }
    for (const DoubleFree &twice : process.double_frees) {
      out += "\n" + tag + "Double free of " + hex_address(twice.address) + " [" + std::string(api_name(twice.api)) +
             "] at " + milliseconds(twice.time_ms) + " (already freed at " + milliseconds(twice.first_freed_ms) +
             "; passed to the driver, which decided), from:\n";
      render_stack(out, process, twice.stack_id);
      hand_over_if_full();
    }
    for (const PoolDestroyedInUse &pool : process.pools_destroyed_in_use)
      out += "\n" + tag + "note: memory pool " + hex_address(pool.pool) + " was destroyed at " +
             milliseconds(pool.time_ms) + " with " + std::to_string(pool.outstanding_bytes) +
             " byte(s) still allocated from it; the driver releases the pool only when they are freed\n";
  }
  for (const std::string &problem : report.problems) out += "\nleaseguard: warning: " + problem + "\n";
  if (!report.suppressions_used.empty()) {
    // LeakSanitizer's table of the suppressions that matched.
    char line[96];
    out += "\nSuppressions used:\n  count      bytes template\n";
    for (const SuppressionUse &use : report.suppressions_used) {
      std::snprintf(line, sizeof line, "%7llu %10llu ", static_cast<unsigned long long>(use.allocations),
                    static_cast<unsigned long long>(use.bytes));
      out += line + use.rule + "\n";
    }
  }
  if (report.filtered_allocations != 0)
    out += "\nleaseguard: " + std::to_string(report.filtered_allocations) + " leaked allocation(s) left out by filters\n";
  if (report.baseline_allocations != 0)
    out += "\nleaseguard: " + std::to_string(report.baseline_allocations) +
           " leaked allocation(s) also in the baseline, left out\n";
  out += "\nSUMMARY: leaseguard: " + std::to_string(report.leaked_bytes()) + " byte(s) leaked in " +
         std::to_string(report.leaked_allocations()) + " allocation(s).\n";
  spill(out);
}

}  // namespace leaseguard::report
