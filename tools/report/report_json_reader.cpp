// Reads a JSON report (schema leaseguard-report/1) back into the report model, so reports
// from many machines can be merged, filtered and compared like journals.
//
// Lenient about what is missing (an older report lacks newer fields: they read as 0), strict
// about what is there: a number out of its field's range, or not whole where a count is
// meant, was not written by leaseguard, and converting it would be undefined; the report is
// refused with one line naming the field.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "files.h"
#include "json_value.h"
#include "report_model.h"

namespace leaseguard::report {
namespace {

uint64_t hex_value(const JsonValue &value) {
  if (value.type() != JsonValue::Type::String) return 0;
  return std::strtoull(value.as_string().c_str(), nullptr, 16);
}

std::string text_of(const JsonValue &value) {
  return value.type() == JsonValue::Type::String ? value.as_string() : std::string();
}

bool flag(const JsonValue &value) { return value.type() == JsonValue::Type::Bool && value.as_bool(); }

template <typename Enum, typename Lookup>
Enum enum_from(const JsonValue &value, Enum fallback, Lookup lookup) {
  if (value.type() != JsonValue::Type::String) return fallback;
  for (int i = 0; i < static_cast<int>(Enum::Count); ++i)
    if (lookup(static_cast<Enum>(i)) == value.as_string()) return static_cast<Enum>(i);
  return fallback;
}

Api api_of(const JsonValue &value) { return api_from_name(text_of(value)).value_or(Api::Unknown); }

class JsonReportReader {
 public:
  // False, with `error` set, at the first field out of range.
  bool read(const JsonValue &json, Report &report, const std::string &path, std::string &error) {
    report.suppressed_allocations +=
        number<uint64_t>(json["summary"]["suppressed_allocations"], "suppressed_allocations");
    for (const JsonValue &item : json["processes"].items()) report.processes.push_back(process_of(item, path));
    for (const JsonValue &problem : json["problems"].items())
      if (problem.type() == JsonValue::Type::String) report.problems.push_back(problem.as_string());
    if (json["lease_authority"].type() == JsonValue::Type::Object)
      report.authority_lease = authority_lease_of(json["lease_authority"]);
    if (problem_.empty()) return true;
    error = path + ": " + problem_;
    return false;
  }

 private:
  AuthorityLease authority_lease_of(const JsonValue &json) {
    AuthorityLease lease;
    lease.id = number<uint64_t>(json["id"], "lease_authority.id");
    lease.name = text_of(json["name"]);
    lease.ended_by = text_of(json["ended_by"]);
    lease.teardown = text_of(json["teardown"]);
    for (const JsonValue &stage : json["stages"].items())
      lease.stages.push_back(
          {text_of(stage["stage"]), number<uint64_t>(stage["at_ms"], "lease_authority.stages.at_ms")});
    for (const JsonValue &item : json["processes"].items()) {
      LeaseProcessAccount process;
      process.pid = number<int>(item["pid"], "lease_authority.processes.pid");
      process.gave_back_bytes = number<uint64_t>(item["gave_back_bytes"], "lease_authority.processes.gave_back_bytes");
      for (const JsonValue &held : item["held"].items())
        process.held.emplace_back(number<int>(held["device"], "lease_authority.processes.held.device"),
                                  number<uint64_t>(held["bytes"], "lease_authority.processes.held.bytes"));
      process.journal = text_of(item["journal"]);
      lease.processes.push_back(std::move(process));
    }
    const JsonValue &verify = json["verify"];
    lease.verify = text_of(verify["result"]) == "none" ? "" : text_of(verify["result"]);
    lease.verify_detail = text_of(verify["detail"]);
    for (const JsonValue &item : verify["held"].items()) {
      AuthorityLease::Held held;
      held.pid = number<int>(item["pid"], "lease_authority.verify.held.pid");
      held.device = number<int>(item["device"], "lease_authority.verify.held.device");
      if (item["bytes"].type() == JsonValue::Type::Number)
        held.bytes = number<uint64_t>(item["bytes"], "lease_authority.verify.held.bytes");
      lease.verify_held.push_back(held);
    }
    for (const JsonValue &item : json["survived"].items())
      lease.survived.push_back(number<int>(item, "lease_authority.survived"));
    return lease;
  }

  // An event's stack: in place ("stack"), or by its index in the process's table of stacks
  // ("stack_ref", render_json's JsonStacks::Shared), each index interned once. An index past
  // the table is a problem.
  uint32_t stack_id_of(ProcessReport &process, const JsonValue &item) {
    const JsonValue &ref = item["stack_ref"];
    if (ref.type() != JsonValue::Type::Number) return stack_id_for(process, item["stack"]);
    const auto index = number<uint64_t>(ref, "stack_ref", UINT64_MAX);
    if (stack_table_ == nullptr || index >= stack_table_->size()) {
      note("stack_ref", ref.as_number());
      return 0;
    }
    auto [at, added] = stack_ids_by_ref_.try_emplace(index, 0);
    if (added) at->second = stack_id_for(process, (*stack_table_)[index]);
    return at->second;
  }

  // An integer field: its value if whole and within T, else `fallback` (absent) or a problem.
  template <typename T>
  T number(const JsonValue &value, const char *field, T fallback = 0) {
    if (value.type() != JsonValue::Type::Number) return fallback;
    const double x = value.as_number();
    const double low = static_cast<double>(std::numeric_limits<T>::min());
    const double high = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exclusive, exact as a double
    if (x >= low && x < high && x == std::trunc(x)) return static_cast<T>(x);
    note(field, x);
    return fallback;
  }
  // A time in milliseconds: any finite number.
  double milliseconds(const JsonValue &value, const char *field) {
    if (value.type() != JsonValue::Type::Number) return 0;
    if (std::isfinite(value.as_number())) return value.as_number();
    note(field, value.as_number());
    return 0;
  }
  void note(const char *field, double value) {
    if (!problem_.empty()) return;
    char text[64];
    std::snprintf(text, sizeof text, "%g", value);
    problem_ = std::string("the number ") + text + " is out of range for '" + field + "'";
  }

  ProcessReport process_of(const JsonValue &item, const std::string &path) {
    ProcessReport process;
    process.journal = path;
    process.pid = number<int32_t>(item["pid"], "pid");
    process.ppid = number<int32_t>(item["ppid"], "ppid");
    process.pid_namespace = number<uint64_t>(item["pid_namespace"], "pid_namespace");
    for (const JsonValue &device : item["devices"].items())
      process.device_uuids[number<int>(device["device"], "devices.device")] = text_of(device["uuid"]);
    for (const JsonValue &argument : item["command"].items())
      if (argument.type() == JsonValue::Type::String) process.command.push_back(argument.as_string());
    process.executable = text_of(item["executable"]);
    if (item["exit"]["code"].type() == JsonValue::Type::Number)
      process.exit_code = number<int>(item["exit"]["code"], "code");
    if (item["exit"]["signal"].type() == JsonValue::Type::Number)
      process.exit_signal = number<int>(item["exit"]["signal"], "signal");
    process.complete = flag(item["complete"]);
    process.running = flag(item["running"]);
    if (item["live_allocations"].type() == JsonValue::Type::Number)
      process.live_allocations = number<uint64_t>(item["live_allocations"], "live_allocations");
    if (item["live_bytes"].type() == JsonValue::Type::Number)
      process.live_bytes = number<uint64_t>(item["live_bytes"], "live_bytes");
    process.classified = flag(item["reachability"]["classified"]);
    process.reachability_flags = reachability_flags(item["reachability"]);
    if (item["drivers"].type() == JsonValue::Type::Array) {
      process.drivers = journal::kDriversKnown;
      for (const JsonValue &driver : item["drivers"].items()) {
        if (driver.type() != JsonValue::Type::String) continue;
        if (driver.as_string() == "cuda") process.drivers |= journal::kDriverCuda;
        else if (driver.as_string() == "hip") process.drivers |= journal::kDriverHip;
      }
    }
    process.exec_replaced = flag(item["exec"]);
    process.allocations = number<uint64_t>(item["allocations"], "allocations");
    process.frees = number<uint64_t>(item["frees"], "frees");
    process.unknown_frees = number<uint64_t>(item["unknown_frees"], "unknown_frees");
    process.late_frees = number<uint64_t>(item["late_frees"], "late_frees");
    process.compact_journal = text_of(item["journal_mode"]) == "compact";
    process.recycled_allocations = number<uint64_t>(item["recycled_allocations"], "recycled_allocations");
    process.recycled_bytes = number<uint64_t>(item["recycled_bytes"], "recycled_bytes");
    process.event_time_resolution_ms = milliseconds(item["event_time_resolution_ms"], "event_time_resolution_ms");
    process.peak_between_threads_ms = milliseconds(item["peak_between_threads_ms"], "peak_between_threads_ms");
    for (const JsonValue &pool : item["pools_destroyed_in_use"].items())
      process.pools_destroyed_in_use.push_back({hex_value(pool["pool"]), milliseconds(pool["time_ms"], "time_ms"),
                                                number<uint64_t>(pool["outstanding_bytes"], "outstanding_bytes")});
    stack_ids_.clear();
    stack_ids_by_ref_.clear();
    stack_table_ = &item["stack_table"];
    for (const JsonValue &twice : item["double_frees"].items())
      process.double_frees.push_back(double_free_of(twice, process));
    for (const JsonValue &arrival : item["signals"].items())
      process.signals.push_back({number<int>(arrival["signal"], "signal"), milliseconds(arrival["time_ms"], "time_ms"),
                                 flag(arrival["handled"])});
    read_checks(item, process);
    for (const JsonValue &wrong : item["wrong_family_frees"].items())
      process.wrong_family_frees.push_back(wrong_family_free_of(wrong, process));
    for (const JsonValue &lease : item["leases"].items()) process.leases.push_back(lease_of(lease, process));
    return process;
  }

  // A classification's journal::kReachability* flags, from the fields render_json writes
  // (absent fields: none, as in a report written before a check had them).
  static uint32_t reachability_flags(const JsonValue &reachability) {
    static constexpr std::pair<const char *, uint32_t> kFields[] = {
        {"device_scan_bounded", journal::kReachabilityDeviceBounded},
        {"threads_not_stopped", journal::kReachabilityThreadsNotStopped},
        {"heap_untracked", journal::kReachabilityHeapUntracked},
        {"python_objects_unread", journal::kReachabilityPythonObjectsUnread},
        {"device_unread", journal::kReachabilityDeviceUnread},
        {"mappings_bounded", journal::kReachabilityMappingsBounded},
        {"memory_short", journal::kReachabilityMemoryShort},
        {"pages_unread", journal::kReachabilityPagesUnread}};
    uint32_t flags = 0;
    for (const auto &[name, bit] : kFields)
      if (flag(reachability[name])) flags |= bit;
    return flags;
  }

  // The process's live checks and its sites' growth across them.
  void read_checks(const JsonValue &item, ProcessReport &process) {
    for (const JsonValue &check : item["checks"].items())
      process.checks.push_back({milliseconds(check["time_ms"], "time_ms"),
                                number<uint64_t>(check["lost_bytes"], "lost_bytes"),
                                number<uint64_t>(check["lost_allocations"], "lost_allocations"),
                                number<uint64_t>(check["reachable_bytes"], "reachable_bytes"),
                                number<uint64_t>(check["reachable_allocations"], "reachable_allocations"),
                                reachability_flags(check["reachability"])});
    for (const JsonValue &site : item["growth"].items()) {
      SiteGrowth growth;
      growth.api = api_of(site["api"]);
      growth.lost_bytes = number<uint64_t>(site["lost_bytes"], "lost_bytes");
      growth.lost_allocations = number<uint64_t>(site["lost_allocations"], "lost_allocations");
      growth.growth_bytes = number<int64_t>(site["growth_bytes"], "growth_bytes");
      growth.growth_allocations = number<int64_t>(site["growth_allocations"], "growth_allocations");
      growth.since_first_bytes = number<int64_t>(site["since_first_check_bytes"], "since_first_check_bytes");
      growth.rate_bytes_per_s = milliseconds(site["rate_bytes_per_s"], "rate_bytes_per_s");
      growth.stack_id = stack_id_of(process, site);
      process.add_site_stack(growth.stack_id, growth.api, process.site_growth.size());
      process.site_growth.push_back(growth);
    }
  }

  LeaseEnding lease_of(const JsonValue &item, ProcessReport &process) {
    LeaseEnding lease;
    lease.id = number<uint32_t>(item["id"], "id");
    lease.name = text_of(item["name"]);
    lease.ended_by = enum_from(item["ended_by"], EndedBy::Exit, ended_by_name);
    lease.policy = enum_from(item["policy"], Policy::Report, policy_name);
    lease.ttl_ms = number<uint64_t>(item["ttl_ms"], "ttl_ms");
    lease.begin_ms = milliseconds(item["begin_ms"], "begin_ms");
    lease.end_ms = milliseconds(item["end_ms"], "end_ms");
    lease.peak_bytes = number<uint64_t>(item["peak_bytes"], "peak_bytes");
    // Absent in older reports: 0.
    lease.unjournaled_allocations = number<uint64_t>(item["unjournaled_allocations"], "unjournaled_allocations");
    lease.unjournaled_bytes = number<uint64_t>(item["unjournaled_bytes"], "unjournaled_bytes");
    lease.signal = number<int>(item["signal"], "signal");
    for (const JsonValue &leak : item["leaks"].items()) {
      Leak read = leak_of(leak, process);
      (read.reachability == Reachability::Reachable ? lease.reachable : lease.leaks).push_back(read);
    }
    for (const JsonValue &late : item["late_frees"].items()) lease.late_frees.push_back(late_free_of(late, process));
    return lease;
  }

  Leak leak_of(const JsonValue &item, ProcessReport &process) {
    Leak leak;
    leak.api = api_of(item["api"]);
    leak.kind = enum_from(item["kind"], Kind::Device, kind_name);
    leak.bytes = number<uint64_t>(item["bytes"], "bytes");
    leak.address = hex_value(item["address"]);
    leak.device = number<int32_t>(item["device"], "device", -1);
    leak.thread = number<uint32_t>(item["thread"], "thread");
    leak.age_ms = number<uint64_t>(item["age_ms"], "age_ms");
    leak.reclaimed = flag(item["reclaimed"]);
    leak.stack_id = stack_id_of(process, item);
    if (item["reachability"].type() == JsonValue::Type::String)
      leak.reachability = reachability_from_name(item["reachability"].as_string()).value_or(Reachability::Unchecked);
    return leak;
  }

  LateFree late_free_of(const JsonValue &item, ProcessReport &process) {
    LateFree late;
    late.api = api_of(item["api"]);
    late.address = hex_value(item["address"]);
    late.thread = number<uint32_t>(item["thread"], "thread");
    late.time_ms = milliseconds(item["time_ms"], "time_ms");
    late.forwarded = !(item["forwarded"].type() == JsonValue::Type::Bool && !item["forwarded"].as_bool());
    late.stack_id = stack_id_of(process, item);
    return late;
  }

  DoubleFree double_free_of(const JsonValue &item, ProcessReport &process) {
    DoubleFree twice;
    twice.api = api_of(item["api"]);
    twice.address = hex_value(item["address"]);
    twice.thread = number<uint32_t>(item["thread"], "thread");
    twice.time_ms = milliseconds(item["time_ms"], "time_ms");
    twice.first_freed_ms = milliseconds(item["first_freed_ms"], "first_freed_ms");
    twice.stack_id = stack_id_of(process, item);
    return twice;
  }

  WrongFamilyFree wrong_family_free_of(const JsonValue &item, ProcessReport &process) {
    WrongFamilyFree wrong;
    wrong.api = api_of(item["api"]);
    if (item["allocated_by"].type() == JsonValue::Type::String) wrong.allocated_by = api_of(item["allocated_by"]);
    wrong.address = hex_value(item["address"]);
    wrong.thread = number<uint32_t>(item["thread"], "thread");
    wrong.time_ms = milliseconds(item["time_ms"], "time_ms");
    if (item["freed_ms"].type() == JsonValue::Type::Number) wrong.freed_ms = milliseconds(item["freed_ms"], "freed_ms");
    wrong.stack_id = stack_id_of(process, item);
    return wrong;
  }

  // Interns a stack (already symbolized) in the process, by content.
  uint32_t stack_id_for(ProcessReport &process, const JsonValue &stack) {
    std::vector<Frame> frames;
    std::string key;
    for (const JsonValue &item : stack.items()) {
      Frame frame;
      if (item["module"].type() == JsonValue::Type::String) frame.module = texts_.intern(item["module"].as_string());
      frame.offset = hex_value(item["offset"]);
      if (item["function"].type() == JsonValue::Type::String)
        frame.function = texts_.intern(item["function"].as_string());
      if (item["file"].type() == JsonValue::Type::String) frame.file = texts_.intern(item["file"].as_string());
      if (item["line"].type() == JsonValue::Type::Number) frame.line = number<int>(item["line"], "line");
      frame.inlined = item["inlined"].type() == JsonValue::Type::Bool && item["inlined"].as_bool();
      key += frame.module + "\x1f" + std::to_string(frame.offset) + "\x1f" + frame.function.value_or("") +
             (frame.inlined ? "\x1fi" : "") + "\x1e";
      frames.push_back(std::move(frame));
    }
    if (frames.empty()) return 0;
    auto [it, inserted] = stack_ids_.try_emplace(key, static_cast<uint32_t>(stack_ids_.size() + 1));
    if (inserted) process.add_stack(it->second, frames);
    return it->second;
  }

  std::string problem_;
  std::map<std::string, uint32_t> stack_ids_;                // the current process's stacks, by content
  std::unordered_map<uint64_t, uint32_t> stack_ids_by_ref_;  // and by their index in its table
  const JsonValue *stack_table_ = nullptr;                   // the current process's, if it has one
  TextPool texts_;
};

}  // namespace

bool load_report_json(const std::string &path, Report &report, std::string &error) {
  std::string text;
  if (!read_regular_file(path, text, error)) return false;
  JsonValue json;
  if (!JsonValue::parse(text, json, error)) {
    error = path + ": not JSON: " + error;
    return false;
  }
  if (json["schema"].type() != JsonValue::Type::String || json["schema"].as_string() != "leaseguard-report/1") {
    error = path + ": not a leaseguard report (schema leaseguard-report/1)";
    return false;
  }
  JsonReportReader reader;
  return reader.read(json, report, path, error);
}

}  // namespace leaseguard::report
