// The JSON report, schema leaseguard-report/1 (docs/report-format.md). Unknown values are
// null, never invented.
#include <cinttypes>
#include <cstdio>

#include "json_writer.h"
#include "renderers.h"

namespace leaseguard::report {
namespace {

void write_frame(JsonWriter &json, const Frame &frame) {
  json.begin_object();
  json.key("module");
  if (frame.module.empty()) json.null();
  else json.value(frame.module.str());
  json.key("offset").value(hex_address(frame.offset));
  json.key("function");
  if (frame.function) json.value(frame.function->str());
  else json.null();
  json.key("file");
  if (frame.file) json.value(frame.file->str());
  else json.null();
  json.key("line");
  if (frame.line) json.value(*frame.line);
  else json.null();
  if (frame.inlined) json.key("inlined").value(true);  // only where it is: most frames are not
  json.end_object();
}

// With JsonStacks::Shared, each distinct stack of a process is written once, in its
// "stack_table", and referred to by its index ("stack_ref"); else every stack in place.
class StackRefs {
 public:
  explicit StackRefs(bool shared) : shared_(shared) {}
  bool shared() const { return shared_; }
  // The stack's index in the table, added to it if new.
  uint64_t index_of(uint32_t stack_id) {
    auto [at, added] = index_.try_emplace(stack_id, order_.size());
    if (added) order_.push_back(stack_id);
    return at->second;
  }
  const std::vector<uint32_t> &order() const { return order_; }

 private:
  bool shared_;
  std::unordered_map<uint32_t, uint64_t> index_;
  std::vector<uint32_t> order_;
};

void write_stack(JsonWriter &json, const ProcessReport &process, uint32_t stack_id, StackRefs &refs);

void write_leak(JsonWriter &json, const ProcessReport &process, const Leak &leak, StackRefs &refs) {
  json.begin_object();
  json.key("api").value(api_name(leak.api));
  json.key("kind").value(kind_name(leak.kind));
  json.key("bytes").value(leak.bytes);
  json.key("address").value(hex_address(leak.address));
  json.key("device").value(static_cast<int64_t>(leak.device));
  json.key("thread").value(static_cast<uint64_t>(leak.thread));
  json.key("age_ms").value(leak.age_ms);
  json.key("reclaimed").value(leak.reclaimed);
  json.key("reachability").value(reachability_name(leak.reachability));
  write_stack(json, process, leak.stack_id, refs);
  json.end_object();
}

void write_stack(JsonWriter &json, const ProcessReport &process, uint32_t stack_id, StackRefs &refs) {
  if (refs.shared()) {
    json.key("stack_ref").value(refs.index_of(stack_id));
    return;
  }
  json.key("stack").begin_array();
  for (const Frame &frame : process.stack(stack_id)) write_frame(json, frame);
  json.end_array();
}

void write_late_free(JsonWriter &json, const ProcessReport &process, const LateFree &late, StackRefs &refs) {
  json.begin_object();
  json.key("api").value(api_name(late.api));
  json.key("address").value(hex_address(late.address));
  json.key("thread").value(static_cast<uint64_t>(late.thread));
  json.key("time_ms").value(late.time_ms);
  json.key("forwarded").value(late.forwarded);  // false: reclaimed memory, kept from the driver
  write_stack(json, process, late.stack_id, refs);
  json.end_object();
}

void write_lease(JsonWriter &json, const ProcessReport &process, const LeaseEnding &lease, StackRefs &refs) {
  json.begin_object();
  json.key("id").value(static_cast<uint64_t>(lease.id));
  json.key("name").value(lease.name);
  json.key("ended_by").value(ended_by_name(lease.ended_by));
  json.key("signal");
  if (lease.signal != 0) json.value(lease.signal);
  else json.null();
  json.key("policy").value(policy_name(lease.policy));
  json.key("ttl_ms").value(lease.ttl_ms);
  json.key("begin_ms").value(lease.begin_ms);
  json.key("end_ms").value(lease.end_ms);
  json.key("leaked_bytes").value(lease.leaked_bytes());
  json.key("peak_bytes").value(lease.peak_bytes);
  json.key("unjournaled_allocations").value(lease.unjournaled_allocations);
  json.key("unjournaled_bytes").value(lease.unjournaled_bytes);
  json.key("reachable_bytes").value([&] {
    uint64_t total = 0;
    for (const Leak &leak : lease.reachable) total += leak.bytes;
    return total;
  }());
  // Every allocation live at the lease's end, each with its class: reachable ones too.
  json.key("leaks").begin_array();
  for (const Leak &leak : lease.leaks) write_leak(json, process, leak, refs);
  for (const Leak &leak : lease.reachable) write_leak(json, process, leak, refs);
  json.end_array();
  json.key("late_frees").begin_array();
  for (const LateFree &late : lease.late_frees) write_late_free(json, process, late, refs);
  json.end_array();
  json.end_object();
}

// What happened in a process besides its leases' ends: double frees, wrong-family frees, and
// pools destroyed with allocations outstanding.
// What a classification (its journal::kReachability* `flags`) could not read, each a reason
// its lost allocations are unchecked or that it read some memory as holding no pointers.
void write_reachability_flags(JsonWriter &json, uint32_t flags) {
  json.key("device_scan_bounded").value((flags & journal::kReachabilityDeviceBounded) != 0);
  json.key("threads_not_stopped").value((flags & journal::kReachabilityThreadsNotStopped) != 0);
  json.key("heap_untracked").value((flags & journal::kReachabilityHeapUntracked) != 0);
  json.key("python_objects_unread").value((flags & journal::kReachabilityPythonObjectsUnread) != 0);
  json.key("device_unread").value((flags & journal::kReachabilityDeviceUnread) != 0);
  json.key("mappings_bounded").value((flags & journal::kReachabilityMappingsBounded) != 0);
  json.key("memory_short").value((flags & journal::kReachabilityMemoryShort) != 0);
  json.key("pages_unread").value((flags & journal::kReachabilityPagesUnread) != 0);
}

void write_process_events(JsonWriter &json, const ProcessReport &process, StackRefs &refs) {
  json.key("double_frees").begin_array();
  for (const DoubleFree &twice : process.double_frees) {
    json.begin_object();
    json.key("api").value(api_name(twice.api));
    json.key("address").value(hex_address(twice.address));
    json.key("thread").value(static_cast<uint64_t>(twice.thread));
    json.key("time_ms").value(twice.time_ms);
    json.key("first_freed_ms").value(twice.first_freed_ms);
    write_stack(json, process, twice.stack_id, refs);
    json.end_object();
  }
  json.end_array();
  json.key("signals").begin_array();
  for (const SignalArrival &arrival : process.signals) {
    json.begin_object();
    json.key("signal").value(static_cast<uint64_t>(arrival.signal));
    json.key("time_ms").value(arrival.time_ms);
    json.key("handled").value(arrival.handled);
    json.end_object();
  }
  json.end_array();
  json.key("checks").begin_array();
  for (const LiveCheck &check : process.checks) {
    json.begin_object();
    json.key("time_ms").value(check.time_ms);
    json.key("lost_bytes").value(check.lost_bytes);
    json.key("lost_allocations").value(check.lost_allocations);
    json.key("reachable_bytes").value(check.reachable_bytes);
    json.key("reachable_allocations").value(check.reachable_allocations);
    json.key("reachability").begin_object();
    write_reachability_flags(json, check.reachability_flags);
    json.end_object();
    json.end_object();
  }
  json.end_array();
  json.key("growth").begin_array();
  for (const SiteGrowth &site : process.site_growth) {
    json.begin_object();
    json.key("api").value(api_name(site.api));
    json.key("lost_bytes").value(site.lost_bytes);
    json.key("lost_allocations").value(site.lost_allocations);
    json.key("growth_bytes").value(site.growth_bytes);
    json.key("growth_allocations").value(site.growth_allocations);
    json.key("since_first_check_bytes").value(site.since_first_bytes);
    json.key("rate_bytes_per_s").value(site.rate_bytes_per_s);
    json.key("growing").value(site.growing());
    write_stack(json, process, site.stack_id, refs);
    json.end_object();
  }
  json.end_array();
  json.key("wrong_family_frees").begin_array();
  for (const WrongFamilyFree &wrong : process.wrong_family_frees) {
    json.begin_object();
    json.key("api").value(api_name(wrong.api));
    json.key("allocated_by");
    if (wrong.allocated_by == Api::Unknown) json.null();
    else json.value(api_name(wrong.allocated_by));
    json.key("address").value(hex_address(wrong.address));
    json.key("thread").value(static_cast<uint64_t>(wrong.thread));
    json.key("time_ms").value(wrong.time_ms);
    json.key("freed_ms");
    if (wrong.freed_ms) json.value(*wrong.freed_ms);
    else json.null();
    write_stack(json, process, wrong.stack_id, refs);
    json.end_object();
  }
  json.end_array();
  json.key("pools_destroyed_in_use").begin_array();
  for (const PoolDestroyedInUse &pool : process.pools_destroyed_in_use) {
    json.begin_object();
    json.key("pool").value(hex_address(pool.pool));
    json.key("time_ms").value(pool.time_ms);
    json.key("outstanding_bytes").value(pool.outstanding_bytes);
    json.end_object();
  }
  json.end_array();
}

void write_process(JsonWriter &json, const ProcessReport &process, JsonStacks stacks) {
  StackRefs refs(stacks == JsonStacks::Shared);
  json.begin_object();
  json.key("pid").value(static_cast<int64_t>(process.pid));
  json.key("ppid").value(static_cast<int64_t>(process.ppid));
  json.key("pid_namespace");
  if (process.pid_namespace != 0) json.value(process.pid_namespace);
  else json.null();
  json.key("devices").begin_array();
  for (const auto &[device, uuid] : process.device_uuids)
    json.begin_object().key("device").value(device).key("uuid").value(uuid).end_object();
  json.end_array();
  json.key("command").begin_array();
  for (const std::string &argument : process.command) json.value(argument);
  json.end_array();
  json.key("executable").value(process.executable);
  json.key("exit");
  if (process.exit_signal) json.begin_object().key("signal").value(*process.exit_signal).end_object();
  else if (process.exit_code) json.begin_object().key("code").value(*process.exit_code).end_object();
  else json.null();
  json.key("complete").value(process.complete);
  json.key("running").value(process.running);
  json.key("live_allocations").value(process.live_allocations);
  json.key("live_bytes").value(process.live_bytes);
  json.key("drivers");  // loaded when it ended; null if not known
  if ((process.drivers & journal::kDriversKnown) == 0) {
    json.null();
  } else {
    json.begin_array();
    if (process.drivers & journal::kDriverCuda) json.value("cuda");
    if (process.drivers & journal::kDriverHip) json.value("hip");
    json.end_array();
  }
  json.key("exec").value(process.exec_replaced);
  json.key("journal").value(process.journal);
  json.key("allocations").value(process.allocations);
  json.key("frees").value(process.frees);
  json.key("unknown_frees").value(process.unknown_frees);
  json.key("late_frees").value(process.late_frees);
  json.key("journal_mode").value(process.compact_journal ? "compact" : "full");
  json.key("event_time_resolution_ms").value(process.event_time_resolution_ms);
  json.key("peak_between_threads_ms").value(process.peak_between_threads_ms);
  json.key("recycled_allocations").value(process.recycled_allocations);
  json.key("recycled_bytes").value(process.recycled_bytes);
  write_process_events(json, process, refs);
  json.key("reachability").begin_object();
  json.key("classified").value(process.classified);
  write_reachability_flags(json, process.reachability_flags);
  json.end_object();
  json.key("leases").begin_array();
  for (const LeaseEnding &lease : process.leases) write_lease(json, process, lease, refs);
  json.end_array();
  if (refs.shared()) {
    json.key("stack_table").begin_array();
    for (uint32_t stack_id : refs.order()) {
      json.begin_array();
      for (const Frame &frame : process.stack(stack_id)) write_frame(json, frame);
      json.end_array();
    }
    json.end_array();
  }
  json.end_object();
}

void write_report(JsonWriter &json, const Report &report, JsonStacks stacks) {
  json.begin_object();
  json.key("schema").value("leaseguard-report/1");
  json.key("summary").begin_object();
  json.key("leaked_bytes").value(report.leaked_bytes());
  json.key("leaked_allocations").value(report.leaked_allocations());
  json.key("reachable_bytes").value(report.reachable_bytes());
  json.key("reachable_allocations").value(report.reachable_allocations());
  json.key("suppressed_allocations").value(report.suppressed_allocations);
  json.key("filtered_allocations").value(report.filtered_allocations);
  json.key("baseline_allocations").value(report.baseline_allocations);
  json.key("processes").value(static_cast<uint64_t>(report.processes.size()));
  json.key("leases").value(static_cast<uint64_t>(report.lease_count()));
  json.key("observed").value(observed_name(observed(report)));
  json.end_object();
  json.key("processes").begin_array();
  for (const ProcessReport &process : report.processes) write_process(json, process, stacks);
  json.end_array();
  json.key("problems").begin_array();
  for (const std::string &problem : report.problems) json.value(problem);
  json.end_array();
  if (report.authority_lease) {
    json.key("lease_authority");
    write_authority_lease(json, *report.authority_lease);
  }
  json.end_object();
}

}  // namespace

void write_authority_lease(JsonWriter &json, const AuthorityLease &lease) {
  json.begin_object();
  json.key("id").value(lease.id);
  json.key("name").value(lease.name);
  json.key("ended_by").value(lease.ended_by);
  json.key("teardown").value(lease.teardown);
  json.key("stages").begin_array();
  for (const TeardownStage &stage : lease.stages)
    json.begin_object().key("stage").value(stage.name).key("at_ms").value(stage.at_ms).end_object();
  json.end_array();
  json.key("processes").begin_array();
  for (const LeaseProcessAccount &process : lease.processes) {
    json.begin_object();
    json.key("pid").value(process.pid);
    json.key("gave_back_bytes").value(process.gave_back_bytes);
    json.key("held").begin_array();
    for (const auto &[device, bytes] : process.held)
      json.begin_object().key("device").value(device).key("bytes").value(bytes).end_object();
    json.end_array();
    json.key("journal").value(process.journal);
    json.end_object();
  }
  json.end_array();
  json.key("verify").begin_object();
  json.key("result").value(lease.verify.empty() ? "none" : lease.verify);
  if (!lease.verify_detail.empty()) json.key("detail").value(lease.verify_detail);
  json.key("held").begin_array();
  for (const AuthorityLease::Held &held : lease.verify_held) {
    json.begin_object().key("pid").value(held.pid).key("device").value(held.device).key("bytes");
    if (held.bytes) json.value(*held.bytes);
    else json.null();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.key("survived").begin_array();
  for (int pid : lease.survived) json.value(pid);
  json.end_array();
  json.end_object();
}

std::string render_json(const Report &report) {
  std::string text;
  render_json(report, [&](std::string_view piece) { text.append(piece); });
  return text;
}

void render_json(const Report &report, const TextSink &out, JsonStacks stacks) {
  JsonWriter json(stacks == JsonStacks::Shared ? 0 : 2, out);
  write_report(json, report, stacks);
  json.finish();
  out("\n");
}

}  // namespace leaseguard::report
