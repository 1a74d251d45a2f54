// Reads a JSON report (schema leaseguard-report/1) back into the report model, so reports
// from many machines can be merged, filtered and compared like journals.
#include <cstdlib>
#include <map>

#include "json_value.h"
#include "report_model.h"

namespace leaseguard::report {
namespace {

uint64_t hex_value(const JsonValue &value) {
  if (value.type() != JsonValue::Type::String) return 0;
  return std::strtoull(value.as_string().c_str(), nullptr, 16);
}

uint64_t count(const JsonValue &value) {
  return value.type() == JsonValue::Type::Number && value.as_number() > 0 ? static_cast<uint64_t>(value.as_number()) : 0;
}

template <typename Enum, typename Lookup>
Enum enum_from(const JsonValue &value, Enum fallback, Lookup lookup) {
  if (value.type() != JsonValue::Type::String) return fallback;
  for (int i = 0; i < static_cast<int>(Enum::Count); ++i)
    if (lookup(static_cast<Enum>(i)) == value.as_string()) return static_cast<Enum>(i);
  return fallback;
}

// Interns a stack (already symbolized) in the process, by content.
uint32_t stack_id_for(ProcessReport &process, std::map<std::string, uint32_t> &ids, const JsonValue &stack) {
  std::vector<Frame> frames;
  std::string key;
  for (const JsonValue &item : stack.items()) {
    Frame frame;
    if (item["module"].type() == JsonValue::Type::String) frame.module = item["module"].as_string();
    frame.offset = hex_value(item["offset"]);
    if (item["function"].type() == JsonValue::Type::String) frame.function = item["function"].as_string();
    if (item["file"].type() == JsonValue::Type::String) frame.file = item["file"].as_string();
    if (item["line"].type() == JsonValue::Type::Number) frame.line = static_cast<int>(item["line"].as_number());
    key += frame.module + "\x1f" + std::to_string(frame.offset) + "\x1f" + frame.function.value_or("") + "\x1e";
    frames.push_back(std::move(frame));
  }
  if (frames.empty()) return 0;
  auto [it, inserted] = ids.try_emplace(key, static_cast<uint32_t>(ids.size() + 1));
  if (inserted) process.add_stack(it->second, frames);
  return it->second;
}

}  // namespace

bool load_report_json(const std::string &path, Report &report, std::string &error) {
  std::string text;
  if (!read_text_file(path, text)) {
    error = "cannot read " + path;
    return false;
  }
  JsonValue json;
  if (!JsonValue::parse(text, json, error)) {
    error = path + ": not JSON: " + error;
    return false;
  }
  if (json["schema"].type() != JsonValue::Type::String || json["schema"].as_string() != "leaseguard-report/1") {
    error = path + ": not a leaseguard report (schema leaseguard-report/1)";
    return false;
  }
  report.suppressed_allocations += count(json["summary"]["suppressed_allocations"]);
  for (const JsonValue &item : json["processes"].items()) {
    ProcessReport process;
    process.journal = path;
    process.pid = static_cast<int32_t>(count(item["pid"]));
    process.ppid = static_cast<int32_t>(count(item["ppid"]));
    for (const JsonValue &argument : item["command"].items())
      if (argument.type() == JsonValue::Type::String) process.command.push_back(argument.as_string());
    if (item["executable"].type() == JsonValue::Type::String) process.executable = item["executable"].as_string();
    if (item["exit"]["code"].type() == JsonValue::Type::Number) process.exit_code = static_cast<int>(item["exit"]["code"].as_number());
    if (item["exit"]["signal"].type() == JsonValue::Type::Number)
      process.exit_signal = static_cast<int>(item["exit"]["signal"].as_number());
    process.complete = item["complete"].type() == JsonValue::Type::Bool && item["complete"].as_bool();
    process.exec_replaced = item["exec"].type() == JsonValue::Type::Bool && item["exec"].as_bool();
    process.allocations = count(item["allocations"]);
    process.frees = count(item["frees"]);
    process.unknown_frees = count(item["unknown_frees"]);
    process.late_frees = count(item["late_frees"]);
    process.compact_journal = item["journal_mode"].type() == JsonValue::Type::String &&
                              item["journal_mode"].as_string() == "compact";
    process.recycled_allocations = count(item["recycled_allocations"]);
    process.recycled_bytes = count(item["recycled_bytes"]);
    if (item["event_time_resolution_ms"].type() == JsonValue::Type::Number)
      process.event_time_resolution_ms = item["event_time_resolution_ms"].as_number();
    for (const JsonValue &pool_item : item["pools_destroyed_in_use"].items()) {
      PoolDestroyedInUse pool;
      pool.pool = hex_value(pool_item["pool"]);
      if (pool_item["time_ms"].type() == JsonValue::Type::Number) pool.time_ms = pool_item["time_ms"].as_number();
      pool.outstanding_bytes = count(pool_item["outstanding_bytes"]);
      process.pools_destroyed_in_use.push_back(pool);
    }
    std::map<std::string, uint32_t> stack_ids;
    for (const JsonValue &twice_item : item["double_frees"].items()) {
      DoubleFree twice;
      twice.api = api_from_name(twice_item["api"].type() == JsonValue::Type::String ? twice_item["api"].as_string() : "")
                      .value_or(Api::Unknown);
      twice.address = hex_value(twice_item["address"]);
      twice.thread = static_cast<uint32_t>(count(twice_item["thread"]));
      if (twice_item["time_ms"].type() == JsonValue::Type::Number) twice.time_ms = twice_item["time_ms"].as_number();
      if (twice_item["first_freed_ms"].type() == JsonValue::Type::Number)
        twice.first_freed_ms = twice_item["first_freed_ms"].as_number();
      twice.stack_id = stack_id_for(process, stack_ids, twice_item["stack"]);
      process.double_frees.push_back(twice);
    }
    for (const JsonValue &lease_item : item["leases"].items()) {
      LeaseEnding lease;
      lease.id = static_cast<uint32_t>(count(lease_item["id"]));
      if (lease_item["name"].type() == JsonValue::Type::String) lease.name = lease_item["name"].as_string();
      lease.ended_by = enum_from(lease_item["ended_by"], EndedBy::Exit, ended_by_name);
      lease.policy = enum_from(lease_item["policy"], Policy::Report, policy_name);
      lease.ttl_ms = count(lease_item["ttl_ms"]);
      lease.begin_ms = lease_item["begin_ms"].as_number();
      lease.end_ms = lease_item["end_ms"].as_number();
      lease.peak_bytes = count(lease_item["peak_bytes"]);
      lease.unjournaled_allocations = count(lease_item["unjournaled_allocations"]);  // absent in older reports: 0
      lease.unjournaled_bytes = count(lease_item["unjournaled_bytes"]);
      if (lease_item["signal"].type() == JsonValue::Type::Number) lease.signal = static_cast<int>(lease_item["signal"].as_number());
      for (const JsonValue &leak_item : lease_item["leaks"].items()) {
        Leak leak;
        leak.api = api_from_name(leak_item["api"].type() == JsonValue::Type::String ? leak_item["api"].as_string() : "")
                       .value_or(Api::Unknown);
        leak.kind = enum_from(leak_item["kind"], Kind::Device, kind_name);
        leak.bytes = count(leak_item["bytes"]);
        leak.address = hex_value(leak_item["address"]);
        leak.device = leak_item["device"].type() == JsonValue::Type::Number ? static_cast<int32_t>(leak_item["device"].as_number()) : -1;
        leak.thread = static_cast<uint32_t>(count(leak_item["thread"]));
        leak.age_ms = count(leak_item["age_ms"]);
        leak.reclaimed = leak_item["reclaimed"].type() == JsonValue::Type::Bool && leak_item["reclaimed"].as_bool();
        leak.stack_id = stack_id_for(process, stack_ids, leak_item["stack"]);
        lease.leaks.push_back(leak);
      }
      for (const JsonValue &late_item : lease_item["late_frees"].items()) {
        LateFree late;
        late.api = api_from_name(late_item["api"].type() == JsonValue::Type::String ? late_item["api"].as_string() : "")
                       .value_or(Api::Unknown);
        late.address = hex_value(late_item["address"]);
        late.thread = static_cast<uint32_t>(count(late_item["thread"]));
        late.time_ms = late_item["time_ms"].as_number();
        late.forwarded = !(late_item["forwarded"].type() == JsonValue::Type::Bool && !late_item["forwarded"].as_bool());
        late.stack_id = stack_id_for(process, stack_ids, late_item["stack"]);
        lease.late_frees.push_back(late);
      }
      process.leases.push_back(std::move(lease));
    }
    report.processes.push_back(std::move(process));
  }
  for (const JsonValue &problem : json["problems"].items())
    if (problem.type() == JsonValue::Type::String) report.problems.push_back(problem.as_string());
  return true;
}

}  // namespace leaseguard::report
