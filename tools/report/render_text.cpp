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
  if (process.running) return "is running";
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

std::string lease_details(const ProcessReport &process, const LeaseEnding &lease) {
  std::string text = "policy " + std::string(policy_name(lease.policy));
  if (lease.ttl_ms != 0) text += ", ttl " + std::to_string(lease.ttl_ms) + " ms";
  text += ", began at " + milliseconds(lease.begin_ms) + ", peak " + std::to_string(lease.peak_bytes) + " byte(s)";
  if (process.peak_between_threads_ms > 0)
    text += " (exact within each thread, between threads to " + milliseconds(process.peak_between_threads_ms) + ")";
  if (!lease.late_frees.empty()) text += ", " + std::to_string(lease.late_frees.size()) + " late free(s)";
  return text;
}

}  // namespace

std::string render_text(const Report &report) {
  std::string out;
  render_text(report, [&](std::string_view piece) { out.append(piece); });
  return out;
}

namespace {

// The text report, handed to its sink after each leak group, late free or double free.
class TextReport {
 public:
  TextReport(const Report &report, const TextSink &sink) : report_(report), out_(sink) {}

  void render() {
    for (const ProcessReport &process : report_.processes) render_process(process);
    render_footer();
    out_.finish();
  }

 private:
  // "process PID", and its PID namespace where another process of the report has its pid
  // (two processes in two namespaces, each pid 1 there).
  std::string process_name(const ProcessReport &process) const {
    std::string name = "process " + std::to_string(process.pid);
    for (const ProcessReport &other : report_.processes)
      if (&other != &process && other.pid == process.pid && other.pid_namespace != process.pid_namespace &&
          process.pid_namespace != 0)
        return name + " in PID namespace " + std::to_string(process.pid_namespace);
    return name;
  }

  void render_process(const ProcessReport &process) {
    bool any_late_free = false;
    for (const LeaseEnding &lease : process.leases) any_late_free = any_late_free || !lease.late_frees.empty();
    const bool leaks = process.leaked_allocations() != 0 || any_late_free;
    const bool listed_reachable = report_.show_reachable && process.reachable_allocations() != 0;
    const std::string tag = "==" + std::to_string(process.pid) + "==";
    std::string &out = out_.text();
    if (!leaks && !listed_reachable && process.double_frees.empty() && process.wrong_family_frees.empty()) {
      // A process still running is said to be, leaks or not: its journal is not a crash's.
      if (process.running)
        out += "\n" + tag + process_name(process) + " (" + command_line(process) + ") " + how_it_ended(process) + "\n" +
               running_note(process, tag) + checks_note(process, tag);
      return;
    }
    // The header names what was found: leaks only where there are leaks.
    const bool invalid_frees = !process.double_frees.empty() || !process.wrong_family_frees.empty();
    out += "\n" + tag + (leaks || invalid_frees ? "ERROR: " : "") + "leaseguard: " +
           (leaks           ? "detected device memory leaks"
            : invalid_frees ? "detected invalid frees (and no leaks)"
                            : "no leaks; memory still reachable") +
           "\n";
    out += tag + process_name(process) + " (" + command_line(process) + ") " + how_it_ended(process) + "\n";
    // An exit code without a signal: `_exit`, or an exit leaseguard stood aside from (called
    // from a signal handler that interrupted it). "Died" would contradict the code above.
    if (process.running) out += running_note(process, tag);
    else if (!process.complete)
      out += tag + (process.exit_code && !process.exit_signal ? "the process exited" : "the process died") +
             " before it could end its leases; its live allocations are reported from the journal\n";
    if (const std::string note = reachability_note(process); !note.empty()) out += tag + note + "\n";
    for (const SignalArrival &arrival : process.signals)
      out += tag + "signal " + std::to_string(arrival.signal) + " arrived at " + milliseconds(arrival.time_ms) +
             (arrival.handled ? "; the program's handler ran" : "; its default action ended the process") + "\n";
    out += checks_note(process, tag);
    for (const LeaseEnding &lease : process.leases) render_lease(process, lease, tag);
    render_process_events(process, tag);
  }

  // The process's live checks (leaseguard_check): how many, and what the last one found.
  static std::string checks_note(const ProcessReport &process, const std::string &tag) {
    if (process.checks.empty()) return "";
    const LiveCheck &last = process.checks.back();
    const std::string partial = reachability_note(last.reachability_flags);
    return tag + std::to_string(process.checks.size()) + " live check(s); the last, at " + milliseconds(last.time_ms) +
           ", found " + std::to_string(last.lost_allocations) + " allocation(s) of " + std::to_string(last.lost_bytes) +
           " byte(s) lost and " + std::to_string(last.reachable_allocations) + " of " +
           std::to_string(last.reachable_bytes) + " byte(s) still reachable\n" +
           (partial.empty() ? "" : tag + "at the last check, " + partial + "\n");
  }

  // What a running process holds: its leases have not ended, so nothing of it is a leak yet,
  // except what its last live check found lost (listed as the check's, below).
  static std::string running_note(const ProcessReport &process, const std::string &tag) {
    return tag + "the process is still running: " + std::to_string(process.live_allocations) + " allocation(s) of " +
           std::to_string(process.live_bytes) + " byte(s) live in leases that have not ended; " +
           (process.checks.empty() ? "no live check has run (`leaseguard check " + std::to_string(process.pid) +
                                         "` runs one); they are leaks only if still live when their lease ends\n"
                                   : "what its last live check found lost is listed as the check's\n");
  }

  // Why some of a process's live allocations could not be classified at its end, if they could not.
  static std::string reachability_note(const ProcessReport &process) {
    return process.classified ? reachability_note(process.reachability_flags) : "";
  }

  // Why some of the allocations a classification (journal::kReachability* `flags`) looked at
  // could not be classified, or were read in part.
  static std::string reachability_note(uint32_t flags) {
    std::string note;
    if ((flags & journal::kReachabilityMemoryShort) != 0)
      return "the classification did not run: it needed more memory than the process could spare (its memory or "
             "address-space limit, or the machine's free memory): live allocations are unchecked";
    if ((flags & journal::kReachabilityThreadsNotStopped) != 0)
      note +=
          "the program's threads could not all be stopped (ptrace was refused: a debugger, strace, seccomp or Yama; "
          "there were more than 16,384; one stayed inside a heap call; or no descriptor was left to list them) or a "
          "stack could not be read: lost allocations are unchecked";
    else if ((flags & journal::kReachabilityHeapUntracked) != 0)
      note +=
          "the program's host heap was not all tracked (its own malloc, a heap or mapping call from a signal handler "
          "inside another, or over a million mappings): lost allocations are unchecked";
    else if ((flags & journal::kReachabilityPythonObjectsUnread) != 0)
      note +=
          "the program's Python objects could not be read (an object allocator leaseguard does not know, or its "
          "interpreter had finalized): lost allocations are unchecked";
    else if ((flags & journal::kReachabilityPagesUnread) != 0)
      note +=
          "some of the program's memory could not be read without faulting it in (pages swapped out, or more "
          "mapped memory than the scan examines): lost allocations are unchecked";
    if ((flags & journal::kReachabilityDeviceBounded) != 0)
      note += std::string(note.empty() ? "" : "; ") +
              "the reachability scan was bounded: device memory past --device-scan was read as holding no pointers";
    if ((flags & journal::kReachabilityDeviceUnread) != 0)
      note += std::string(note.empty() ? "" : "; ") +
              "the driver refused to copy some device memory back: it was read as holding no pointers";
    if ((flags & journal::kReachabilityMappingsBounded) != 0)
      note += std::string(note.empty() ? "" : "; ") +
              "the program's own mappings past 4 GiB in all were read as holding no pointers";
    return note;
  }

  void render_lease(const ProcessReport &process, const LeaseEnding &lease, const std::string &tag) {
    const bool listed_reachable = report_.show_reachable && !lease.reachable.empty();
    if (lease.leaked_allocations() == 0 && lease.late_frees.empty() && !listed_reachable) return;
    std::string &out = out_.text();
    if (lease.ended_by == EndedBy::Check) {
      // It has not ended: what the check found, of what was live then.
      out += "\n" + tag + "lease " + std::to_string(lease.id) + " \"" + lease.name + "\" (" +
             lease_details(process, lease) + ") checked at " + milliseconds(lease.end_ms) +
             " while it runs: " + std::to_string(lease.leaked_bytes()) + " byte(s) lost in " +
             std::to_string(lease.leaked_allocations()) + " allocation(s)\n";
      render_groups(process, group_leaks(process, lease));
      if (listed_reachable) render_groups(process, group_leaks(lease.reachable));
      return;
    }
    out += "\n" + tag + "lease " + std::to_string(lease.id) + " \"" + lease.name + "\" (" +
           lease_details(process, lease) + ") ended by " + std::string(ended_by_name(lease.ended_by)) +
           (lease.signal != 0 ? " (signal " + std::to_string(lease.signal) + ")" : "") + " at " +
           milliseconds(lease.end_ms) + ": " + std::to_string(lease.leaked_bytes()) + " byte(s) in " +
           std::to_string(lease.leaked_allocations()) + " allocation(s)\n";
    if (lease.unjournaled_allocations != 0)
      out += "\nLeak of " + std::to_string(lease.unjournaled_bytes) + " byte(s) in " +
             std::to_string(lease.unjournaled_allocations) +
             " allocation(s) made while the journal was full: no stack or entry point was recorded for them\n";
    render_groups(process, group_leaks(process, lease));
    if (listed_reachable) render_groups(process, group_leaks(lease.reachable));
    for (const LateFree &late : lease.late_frees) {
      out_.text() += "\nLate free of " + hex_address(late.address) + " [" + std::string(api_name(late.api)) + "] at " +
                     milliseconds(late.time_ms) +
                     (late.forwarded ? "" : ", reclaimed memory: not passed to the driver") + ", from:\n";
      render_stack(out_.text(), process, late.stack_id);
      out_.hand_over_if_full();
    }
  }

  void render_groups(const ProcessReport &process, const std::vector<LeakGroup> &groups) {
    const size_t shown =
        report_.max_groups != 0 && groups.size() > report_.max_groups ? report_.max_groups : groups.size();
    for (size_t index = 0; index < shown; ++index) {
      const LeakGroup &group = groups[index];
      std::string &out = out_.text();
      out += "\n" + std::string(group_heading(group.reachability)) + std::to_string(group.bytes) + " byte(s) in " +
             std::to_string(group.allocations) + " allocation(s) [" + std::string(api_name(group.api)) + ", " +
             describe(group.api, group.kind) + ", device " + std::to_string(group.device) +
             (group.reclaimed ? ", reclaimed" : "") + "] allocated from:\n";
      if (const SiteGrowth *site = process.growth_of(group.stack_id, group.api);
          site != nullptr && group.reachability != Reachability::Reachable)
        out += growth_line(*site);
      render_stack(out, process, group.stack_id);
      if (report_.suggest_suppressions) {
        const std::string rule = suggest_suppression(process, group.stack_id);
        if (!rule.empty()) out += "  Suppress with: " + rule + "\n";
      }
      out_.hand_over_if_full();
    }
    if (shown < groups.size())
      out_.text() += "\n(omitting " + std::to_string(groups.size() - shown) + " more leak group(s))\n";
  }

  // A site's change across the live checks: since the first, and since the one before.
  static std::string growth_line(const SiteGrowth &site) {
    const std::string since_before = std::to_string(site.growth_bytes) + " byte(s) in " +
                                     std::to_string(site.growth_allocations) + " allocation(s) since the check before";
    if (!site.growing()) return "  not growing since the first check; " + since_before + "\n";
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.0f", site.rate_bytes_per_s);
    return "  growing: +" + std::to_string(site.since_first_bytes) + " byte(s) since the first check, " + rate +
           " byte(s)/s; " + (site.growth_bytes > 0 ? "+" : "") + since_before + "\n";
  }

  // LeakSanitizer's words for its classes; "Leak of" where nothing classified it.
  static const char *group_heading(Reachability reachability) {
    switch (reachability) {
      case Reachability::Direct: return "Direct leak of ";
      case Reachability::Indirect: return "Indirect leak of ";
      case Reachability::Reachable: return "Reachable: ";
      case Reachability::Unchecked: break;
    }
    return "Leak of ";
  }

  void render_process_events(const ProcessReport &process, const std::string &tag) {
    for (const DoubleFree &twice : process.double_frees) {
      out_.text() += "\n" + tag + "Double free of " + hex_address(twice.address) + " [" +
                     std::string(api_name(twice.api)) + "] at " + milliseconds(twice.time_ms) + " (already freed at " +
                     milliseconds(twice.first_freed_ms) + "; passed to the driver, which decided), from:\n";
      render_stack(out_.text(), process, twice.stack_id);
      out_.hand_over_if_full();
    }
    for (const WrongFamilyFree &wrong : process.wrong_family_frees) {
      const std::string made_by =
          wrong.allocated_by != Api::Unknown ? std::string(api_name(wrong.allocated_by)) : "another family";
      out_.text() += "\n" + tag + "Wrong-family free of " + hex_address(wrong.address) + " [" +
                     std::string(api_name(wrong.api)) + "] at " + milliseconds(wrong.time_ms) + " (made by " + made_by +
                     ", which " + std::string(api_name(wrong.api)) + " does not free; " +
                     (wrong.freed_ms ? "its own release freed it at " + milliseconds(*wrong.freed_ms)
                                     : std::string("it was live then")) +
                     "; passed to the driver, which decided), from:\n";
      render_stack(out_.text(), process, wrong.stack_id);
      out_.hand_over_if_full();
    }
    for (const PoolDestroyedInUse &pool : process.pools_destroyed_in_use)
      out_.text() += "\n" + tag + "note: memory pool " + hex_address(pool.pool) + " was destroyed at " +
                     milliseconds(pool.time_ms) + " with " + std::to_string(pool.outstanding_bytes) +
                     " byte(s) still allocated from it; the driver releases the pool only when they are freed\n";
  }

  // `lease start`'s lease as the node lease authority ended it: each stage of its teardown,
  // what each process gave back and held, and what the device said.
  void render_authority_lease(const AuthorityLease &lease) {
    std::string &out = out_.text();
    out += "\nleaseguard: lease " + lease.name + " (id " + std::to_string(lease.id) + ") ended by " + lease.ended_by +
           "; teardown " + lease.teardown + "\n";
    for (const TeardownStage &stage : lease.stages)
      out += "leaseguard:   stage " + stage.name + " at +" + std::to_string(stage.at_ms) + " ms\n";
    for (const LeaseProcessAccount &process : lease.processes) {
      std::string held;
      for (const auto &[device, bytes] : process.held)
        held += (held.empty() ? "" : ",") + std::to_string(device) + ":" + std::to_string(bytes);
      const std::string at_end = held.empty() ? "no device memory" : "device:bytes " + held;
      out += "leaseguard:   process " + std::to_string(process.pid) +
             (process.gave_back_bytes == 0
                  ? ""
                  : " gave back " + std::to_string(process.gave_back_bytes) + " byte(s) of device memory when asked;") +
             " held " + at_end + " at the end\n";
    }
    if (!lease.survived.empty()) {
      out += "leaseguard:   verify: still running after SIGKILL (stuck in the kernel):";
      for (int pid : lease.survived) out += " " + std::to_string(pid);
      out += "\n";
    }
    if (lease.verify == "clean") {
      out += "leaseguard:   verify: no process of the lease holds device memory (NVML)\n";
    } else if (lease.verify == "skipped") {
      out += "leaseguard:   verify: device memory not checked: " + lease.verify_detail + "\n";
    } else if (lease.verify == "held") {
      out += "leaseguard:   verify: device memory still held (pid:device:bytes):";
      for (const AuthorityLease::Held &held : lease.verify_held)
        out += " " + std::to_string(held.pid) + ":" + std::to_string(held.device) + ":" +
               (held.bytes ? std::to_string(*held.bytes) : "?");
      out += "\n";
    }
  }

  // The problems, the suppressions that matched (LeakSanitizer's table), what filters and
  // the baseline left out, and SUMMARY.
  void render_footer() {
    std::string &out = out_.text();
    if (report_.authority_lease) render_authority_lease(*report_.authority_lease);
    for (const std::string &problem : report_.problems) out += "\nleaseguard: warning: " + problem + "\n";
    if (!report_.suppressions_used.empty()) {
      char line[96];
      out += "\nSuppressions used:\n  count      bytes template\n";
      for (const SuppressionUse &use : report_.suppressions_used) {
        std::snprintf(line, sizeof line, "%7llu %10llu ", static_cast<unsigned long long>(use.allocations),
                      static_cast<unsigned long long>(use.bytes));
        out += line + use.rule + "\n";
      }
    }
    if (report_.filtered_allocations != 0)
      out += "\nleaseguard: " + std::to_string(report_.filtered_allocations) +
             " leaked allocation(s) left out by filters\n";
    if (report_.baseline_allocations != 0)
      out += "\nleaseguard: " + std::to_string(report_.baseline_allocations) +
             " leaked allocation(s) also in the baseline, left out\n";
    if (report_.reachable_allocations() != 0 && !report_.show_reachable)
      out += "\nleaseguard: " + std::to_string(report_.reachable_bytes()) + " byte(s) in " +
             std::to_string(report_.reachable_allocations()) +
             " allocation(s) still reachable (--show-reachable lists them).\n";
    if (const std::string nothing = nothing_checked(report_); !nothing.empty()) {
      out += "\nSUMMARY: leaseguard: nothing was checked: " + nothing + ".\n";
      return;
    }
    out += "\nSUMMARY: leaseguard: " + std::to_string(report_.leaked_bytes()) + " byte(s) leaked in " +
           std::to_string(report_.leaked_allocations()) + " allocation(s).\n";
  }

  const Report &report_;
  SinkBuffer out_;
};

}  // namespace

void render_text(const Report &report, const TextSink &sink) { TextReport(report, sink).render(); }

}  // namespace leaseguard::report
