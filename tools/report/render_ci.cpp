// Formats for CI systems: SARIF 2.1.0 (code scanning), JUnit XML (test dashboards) and
// folded stacks (flame graphs). Each leak group of each lease ending is one result, one
// failure, one folded line per leak.
#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <vector>
#include <string>

#include "json_writer.h"
#include "renderers.h"
#include "runtime_frames.h"

#ifndef LEASEGUARD_VERSION
#define LEASEGUARD_VERSION "0.0.0"
#endif

namespace leaseguard::report {
namespace {

constexpr const char *kRuleId = "leaseguard/device-memory-leak";

std::string fingerprint(const ProcessReport &process, const LeakGroup &group) {
  return leak_signature(process, group.stack_id, group.api);
}

// "ended by exit"; a lease a live check found memory lost in has not ended.
std::string ending_words(const LeaseEnding &lease) {
  if (lease.ended_by == EndedBy::Check) return "checked while it runs";
  return "ended by " + std::string(ended_by_name(lease.ended_by));
}

std::string group_message(const ProcessReport &process, const LeaseEnding &lease, const LeakGroup &group) {
  std::string program = process.executable.substr(process.executable.rfind('/') + 1);
  return "Leak of " + std::to_string(group.bytes) + " byte(s) in " + std::to_string(group.allocations) +
         " allocation(s) [" + std::string(api_name(group.api)) + ", device " + std::to_string(group.device) +
         "] in lease \"" + lease.name + "\" (" + ending_words(lease) + ") of " + program + " (pid " +
         std::to_string(process.pid) + ")";
}

std::string unjournaled_message(const LeaseEnding &lease) {
  return "Leak of " + std::to_string(lease.unjournaled_bytes) + " byte(s) in " +
         std::to_string(lease.unjournaled_allocations) + " allocation(s) in lease \"" + lease.name +
         "\" made while the journal was full: no stack or entry point was recorded for them";
}

// A file URI relative to the source root when the file is under it (so code scanning can
// place it in the repository), else absolute.
void write_artifact(JsonWriter &json, const std::string &file, const std::string &source_root) {
  json.key("artifactLocation").begin_object();
  std::string root = source_root;
  if (!root.empty() && root.back() != '/') root += '/';
  if (!root.empty() && file.rfind(root, 0) == 0) {
    json.key("uri").value(file.substr(root.size()));
    json.key("uriBaseId").value("SRCROOT");
  } else {
    json.key("uri").value((file.empty() || file[0] != '/') ? file : "file://" + file);
  }
  json.end_object();
}

void write_location(JsonWriter &json, const Frame &frame, const std::string &source_root) {
  json.key("physicalLocation").begin_object();
  if (frame.file) {
    write_artifact(json, *frame.file, source_root);
    if (frame.line) json.key("region").begin_object().key("startLine").value(*frame.line).end_object();
  } else {
    write_artifact(json, frame.module, source_root);
    json.key("address").begin_object().key("relativeAddress").value(frame.offset).end_object();
  }
  json.end_object();
  json.key("message").begin_object().key("text").value(frame_name(frame)).end_object();
}

// Where a result with no stack is located: the program (code scanning rejects a result
// without a location, and a leak recorded without its stack still belongs to the program).
void write_program_location(JsonWriter &json, const ProcessReport &process, const std::string &source_root) {
  const std::string program = process.executable.empty() ? std::string("unknown-program") : process.executable;
  json.key("physicalLocation").begin_object();
  write_artifact(json, program, source_root);
  json.end_object();
  json.key("message")
      .begin_object()
      .key("text")
      .value("no stack was recorded for this allocation (--stack-depth 0, or the journal was full)")
      .end_object();
}

std::string xml_escape(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t') out += "&#xfffd;";  // not allowed in XML 1.0
        else out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

constexpr const char *kRuleHelp =
    "A lease (the whole process, a time-to-live, or a scope the program opened) ended while it still owned this "
    "GPU memory, and the program no longer held a pointer to it (direct), or held one only in memory it had "
    "lost itself (indirect). Free it on every path before the lease ends, with the free of the family that "
    "allocated it, or own it with leaseguard::GpuMemHandle. The stack is where the memory was allocated. Memory the "
    "program still "
    "holds on purpose is counted as reachable, never reported; a known leak can be suppressed "
    "(leaseguard run --suppressions FILE).";

// SARIF's tool.driver: leaseguard and its one rule, with what code scanning shows of it.
void write_sarif_driver(JsonWriter &json) {
  json.key("tool").begin_object().key("driver").begin_object();
  json.key("name").value("leaseguard");
  json.key("version").value(LEASEGUARD_VERSION);
  json.key("semanticVersion").value(LEASEGUARD_VERSION);
  json.key("rules").begin_array().begin_object();
  json.key("id").value(kRuleId);
  json.key("name").value("DeviceMemoryLeak");
  json.key("shortDescription")
      .begin_object()
      .key("text")
      .value("GPU memory still allocated when its lease ended")
      .end_object();
  json.key("fullDescription")
      .begin_object()
      .key("text")
      .value("GPU memory that a lease still owned when it ended, and that the program could no longer reach.")
      .end_object();
  json.key("help").begin_object().key("text").value(kRuleHelp).end_object();
  json.key("defaultConfiguration").begin_object().key("level").value("error").end_object();
  json.key("properties").begin_object().key("tags").begin_array().value("memory-leak").value("gpu").end_array();
  json.end_object();
  json.end_object().end_array();
  json.end_object().end_object();
}

// One result: a group of leaks with one stack, located at its site (runtime_frames.h: its first
// frame outside the runtime, or the first out from there with a source file), the whole stack
// as its code flow.
void write_sarif_group(JsonWriter &json, const ProcessReport &process, const LeaseEnding &lease, const LeakGroup &group,
                       const std::string &source_root) {
  json.begin_object();
  json.key("ruleId").value(kRuleId);
  json.key("level").value("error");
  json.key("message").begin_object().key("text").value(group_message(process, lease, group)).end_object();
  const StackView stack = process.stack(group.stack_id);
  json.key("locations").begin_array().begin_object();
  if (!stack.empty()) {
    write_location(json, *located_site_frame(stack), source_root);
  } else {
    write_program_location(json, process, source_root);
  }
  json.end_object().end_array();
  json.key("partialFingerprints")
      .begin_object()
      .key("leaseguardStack/v2")
      .value(fingerprint(process, group))
      .end_object();
  if (!stack.empty()) {  // a thread flow has at least one location
    json.key("codeFlows").begin_array().begin_object().key("threadFlows").begin_array().begin_object();
    json.key("locations").begin_array();
    for (const Frame &frame : stack) {
      json.begin_object().key("location").begin_object();
      write_location(json, frame, source_root);
      json.end_object().end_object();
    }
    json.end_array();
    json.end_object().end_array().end_object().end_array();
  }
  json.key("properties").begin_object();
  json.key("bytes").value(group.bytes);
  json.key("allocations").value(group.allocations);
  json.key("api").value(api_name(group.api));
  json.key("lease").value(lease.name);
  json.end_object();
  json.end_object();
}

// One result for a lease's allocations the journal had no room for: counted, never listed.
void write_sarif_unjournaled(JsonWriter &json, const ProcessReport &process, const LeaseEnding &lease,
                             const std::string &source_root) {
  json.begin_object();
  json.key("ruleId").value(kRuleId);
  json.key("level").value("error");
  json.key("message").begin_object().key("text").value(unjournaled_message(lease)).end_object();
  json.key("locations").begin_array().begin_object();
  write_program_location(json, process, source_root);
  json.end_object().end_array();
  json.key("properties").begin_object();
  json.key("bytes").value(lease.unjournaled_bytes);
  json.key("allocations").value(lease.unjournaled_allocations);
  json.key("lease").value(lease.name);
  json.end_object();
  json.end_object();
}

// SARIF 2.1.0 (render_sarif in renderers.h).
void write_sarif(JsonWriter &json, const Report &report, const std::string &source_root) {
  json.begin_object();
  json.key("$schema").value(
      "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json");
  json.key("version").value("2.1.0");
  json.key("runs").begin_array().begin_object();
  write_sarif_driver(json);
  if (!source_root.empty()) {
    json.key("originalUriBaseIds").begin_object().key("SRCROOT").begin_object();
    json.key("uri").value("file://" + source_root + (source_root.back() == '/' ? "" : "/"));
    json.end_object().end_object();
  }
  json.key("results").begin_array();
  for (const ProcessReport &process : report.processes) {
    for (const LeaseEnding &lease : process.leases) {
      for (const LeakGroup &group : group_leaks(process, lease))
        write_sarif_group(json, process, lease, group, source_root);
      if (lease.unjournaled_allocations != 0) write_sarif_unjournaled(json, process, lease, source_root);
    }
  }
  json.end_array();
  // `lease start`'s lease and its teardown: the run's property bag (no rule is broken by it;
  // the leaks it left are results above).
  if (report.authority_lease) {
    json.key("properties").begin_object().key("leaseAuthority");
    write_authority_lease(json, *report.authority_lease);
    json.end_object();
  }
  json.end_object().end_array();
  json.end_object();
}

}  // namespace

std::string render_sarif(const Report &report, const std::string &source_root) {
  std::string text;
  render_sarif(report, source_root, [&](std::string_view piece) { text.append(piece); });
  return text;
}

void render_sarif(const Report &report, const std::string &source_root, const TextSink &out) {
  JsonWriter json(2, out);
  write_sarif(json, report, source_root);
  json.finish();
  out("\n");
}

std::string render_junit(const Report &report, const std::string &source_root) {
  std::string out;
  render_junit(report, source_root, [&](std::string_view piece) { out.append(piece); });
  return out;
}

namespace {

bool junit_failed(const LeaseEnding &lease) { return !lease.leaks.empty() || lease.unjournaled_allocations != 0; }

std::string seconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ms < 0 ? 0.0 : ms / 1000.0);
  return text;
}

// `lease start`'s lease as one test suite of one case, "teardown", named the same in every
// run (a lease's name is often a scheduler's job id: it is a property): failed where the
// device said a process of the lease still held memory after it; its stages and processes
// in the case's output.
std::string junit_authority_suite(const AuthorityLease &lease) {
  const bool failed = lease.verify == "held" || !lease.survived.empty();
  uint64_t last_stage_ms = 0;
  for (const TeardownStage &stage : lease.stages) last_stage_ms = std::max(last_stage_ms, stage.at_ms);
  std::string out = "  <testsuite name=\"lease authority\" tests=\"1\" failures=\"" + std::string(failed ? "1" : "0") +
                    "\" errors=\"0\" skipped=\"0\" time=\"" + seconds(static_cast<double>(last_stage_ms)) + "\">\n";
  out += "    <properties>\n      <property name=\"lease\" value=\"" + xml_escape(lease.name) + "\"/>\n";
  out += "      <property name=\"id\" value=\"" + std::to_string(lease.id) + "\"/>\n";
  out += "      <property name=\"ended_by\" value=\"" + xml_escape(lease.ended_by) + "\"/>\n";
  out += "      <property name=\"teardown\" value=\"" + xml_escape(lease.teardown) + "\"/>\n    </properties>\n";
  std::string said;
  for (const TeardownStage &stage : lease.stages)
    said += "stage " + stage.name + " at +" + std::to_string(stage.at_ms) + " ms\n";
  for (const LeaseProcessAccount &process : lease.processes) {
    uint64_t held = 0;
    for (const auto &[device, bytes] : process.held) held += bytes;
    said += "process " + std::to_string(process.pid) + " gave back " + std::to_string(process.gave_back_bytes) +
            " byte(s), held " + std::to_string(held) + " byte(s) at the end\n";
  }
  out += "    <testcase classname=\"leaseguard.lease-authority\" name=\"teardown (" + xml_escape(lease.teardown) +
         ")\" time=\"" + seconds(static_cast<double>(last_stage_ms)) + "\">\n";
  if (failed) {
    std::string held;
    for (const AuthorityLease::Held &entry : lease.verify_held)
      held += " " + std::to_string(entry.pid) + ":" + std::to_string(entry.device) + ":" +
              (entry.bytes ? std::to_string(*entry.bytes) : "?");
    std::string survived;
    for (int pid : lease.survived) survived += " " + std::to_string(pid);
    const std::string message = lease.verify == "held"
                                    ? "device memory still held after the lease's teardown (pid:device:bytes):" + held
                                    : "processes still running after SIGKILL:" + survived;
    out += "      <failure type=\"" +
           std::string(lease.verify == "held" ? "DeviceMemoryHeldAfterTeardown" : "ProcessesSurvivedTeardown") +
           "\" message=\"" + xml_escape(message) + "\"/>\n";
  }
  out += "      <system-out>" + xml_escape(said) + "</system-out>\n    </testcase>\n  </testsuite>\n";
  return out;
}

// A test case's name, the same from run to run: the lease's name and how it ended, and where
// a process ended several leases of that name and ending, which one ("#2"); never a pid or
// a lease id, which change every run and would break a dashboard's test history.
std::vector<std::string> junit_case_names(const ProcessReport &process) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const LeaseEnding &lease : process.leases) {
    std::string name = lease.name + " (" + std::string(ended_by_name(lease.ended_by)) + ")";
    const int occurrence = ++seen[name];
    if (occurrence > 1) name += " #" + std::to_string(occurrence);
    names.push_back(name);
  }
  return names;
}

// The source file a failed case points at (GitLab's `file`): the site of its first leak group
// that has one with a file (runtime_frames.h), relative to the source root when under it.
std::string junit_file(const ProcessReport &process, const LeaseEnding &lease, const std::string &source_root) {
  for (const LeakGroup &group : group_leaks(process, lease)) {
    const Frame *site = located_site_frame(process.stack(group.stack_id));
    if (site == nullptr || !site->file) continue;
    std::string root = source_root;
    if (!root.empty() && root.back() != '/') root += '/';
    const std::string file = *site->file;
    return !root.empty() && file.rfind(root, 0) == 0 ? file.substr(root.size()) : file;
  }
  return "";
}

// One failure per failed case, all its leak groups in it: dashboards (GitLab among them)
// show only a case's first failure.
std::string junit_failure(const ProcessReport &process, const LeaseEnding &lease) {
  const std::vector<LeakGroup> groups = group_leaks(process, lease);
  uint64_t bytes = lease.unjournaled_bytes, allocations = lease.unjournaled_allocations;
  for (const LeakGroup &group : groups) {
    bytes += group.bytes;
    allocations += group.allocations;
  }
  const size_t group_count = groups.size() + (lease.unjournaled_allocations != 0 ? 1 : 0);
  const std::string message = "Leak of " + std::to_string(bytes) + " byte(s) in " + std::to_string(allocations) +
                              " allocation(s), " + std::to_string(group_count) + " leak group(s), in lease \"" +
                              lease.name + "\" (" + ending_words(lease) + ")";
  std::string text;
  for (const LeakGroup &group : groups) {
    text += group_message(process, lease, group) + "\n";
    const StackView stack = process.stack(group.stack_id);
    for (size_t i = 0; i < stack.size(); ++i) {
      const Frame &frame = stack[i];
      text += "  #" + std::to_string(i) + " " + frame_name(frame);
      if (frame.file) text += " " + *frame.file + (frame.line ? ":" + std::to_string(*frame.line) : "");
      text += "\n";
    }
    text += "\n";
  }
  if (lease.unjournaled_allocations != 0) text += unjournaled_message(lease) + "\n";
  return "      <failure type=\"DeviceMemoryLeak\" message=\"" + xml_escape(message) + "\">" + xml_escape(text) +
         "</failure>\n";
}

}  // namespace

void render_junit(const Report &report, const std::string &source_root, const TextSink &sink) {
  // A lease ending is a test case, failed if it leaked: counted first, for the headers.
  size_t total_cases = 0, total_failures = 0;
  for (const ProcessReport &process : report.processes) {
    total_cases += process.leases.size();
    for (const LeaseEnding &lease : process.leases) total_failures += junit_failed(lease) ? 1 : 0;
  }
  if (report.authority_lease) {
    ++total_cases;
    total_failures += report.authority_lease->verify == "held" ? 1 : 0;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leaseguard\" tests=\"" +
                    std::to_string(total_cases) + "\" failures=\"" + std::to_string(total_failures) + "\">\n";
  for (const ProcessReport &process : report.processes) {
    size_t failures = 0;
    double duration_ms = 0;
    for (const LeaseEnding &lease : process.leases) {
      failures += junit_failed(lease) ? 1 : 0;
      duration_ms = std::max(duration_ms, lease.end_ms);
    }
    const std::string program = process.executable.substr(process.executable.rfind('/') + 1);
    out += "  <testsuite name=\"" + xml_escape(program) + "\" tests=\"" + std::to_string(process.leases.size()) +
           "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\" skipped=\"0\" time=\"" +
           seconds(duration_ms) + "\">\n";
    out += "    <properties>\n      <property name=\"pid\" value=\"" + std::to_string(process.pid) + "\"/>\n";
    out += "      <property name=\"command\" value=\"" + xml_escape(process.executable) + "\"/>\n    </properties>\n";
    const std::vector<std::string> names = junit_case_names(process);
    for (size_t i = 0; i < process.leases.size(); ++i) {
      const LeaseEnding &lease = process.leases[i];
      out += "    <testcase classname=\"leaseguard." + xml_escape(program) + "\" name=\"" + xml_escape(names[i]) +
             "\" time=\"" + seconds(lease.end_ms - lease.begin_ms) + "\"";
      if (!junit_failed(lease)) {
        out += "/>\n";
        continue;
      }
      const std::string file = junit_file(process, lease, source_root);
      if (!file.empty()) out += " file=\"" + xml_escape(file) + "\"";
      out += ">\n" + junit_failure(process, lease) + "    </testcase>\n";
      if (out.size() >= kSinkPieceBytes) {  // handed over as it grows: a lease may hold 10^5 groups
        sink(out);
        out.clear();
      }
    }
    out += "  </testsuite>\n";
  }
  if (report.authority_lease) out += junit_authority_suite(*report.authority_lease);
  out += "</testsuites>\n";
  sink(out);
}

std::string render_folded(const Report &report) {
  std::string out;
  render_folded(report, [&](std::string_view piece) { out.append(piece); });
  return out;
}

void render_folded(const Report &report, const TextSink &sink) {
  // One line per distinct stack and entry point, its leaks' bytes summed, in the order first
  // met: what flame graph tools expect (20,000 leaks from 200 call sites are 200 lines).
  std::unordered_map<std::string, uint64_t> bytes_by_path;
  std::vector<const std::string *> order;
  for (const ProcessReport &process : report.processes) {
    for (const LeaseEnding &lease : process.leases) {
      for (const Leak &leak : lease.leaks) {
        // Root first; the entry point as the leaf. A name keeps its spaces (the tools read
        // the count after the line's last space); `;` and line breaks in it become `_`.
        std::string path;
        const StackView stack = process.stack(leak.stack_id);
        for (size_t i = stack.size(); i > 0; --i) {
          std::string name = frame_name(stack[i - 1]);
          for (char &c : name)
            if (c == ';' || c == '\n' || c == '\r') c = '_';
          path += name + ";";
        }
        path += api_name(leak.api);
        auto [at, inserted] = bytes_by_path.try_emplace(std::move(path), 0);
        at->second += leak.bytes;
        if (inserted) order.push_back(&at->first);
      }
    }
  }
  std::string out;
  for (const std::string *path : order) {
    out += *path + " " + std::to_string(bytes_by_path[*path]) + "\n";
    if (out.size() >= kSinkPieceBytes) {
      sink(out);
      out.clear();
    }
  }
  if (!out.empty()) sink(out);
}

}  // namespace leaseguard::report
