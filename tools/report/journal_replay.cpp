// Replays a journal into a ProcessReport.
//
// The rules, in journal order:
//   Alloc            the allocation is live, owned by its lease. If the record says it was
//                    freed in place (version 2), the free happened before the next record
//                    whose replay depends on what is live (a lease end, a context or pool
//                    destroyed). It is applied among the records that follow where it
//                    happened, so live bytes and peaks stay exact: before the record at the
//                    slot it names (version 5), at that record's time; in earlier versions
//                    at the time it gives, in time order.
//   Free             it is no longer live; if it had already been reported (its lease had
//                    ended or expired), the free is a late free, listed with its stack.
//                    A free flagged "reclaimed" is leaseguard giving a reported leak back at
//                    its lease's end (the leak is marked reclaimed if the driver agreed); a
//                    free flagged "late" is the program's free of such memory, which was
//                    kept from the driver.
//   LeaseEnd         every live, unreported allocation of the lease is a leak of that
//                    lease ending (ended_by end, expiry or exit); they stay live, reported.
//   ContextDestroy   every live allocation of the context recorded before the destroy
//                    began (except stream-ordered memory, which belongs to its pool) is
//                    gone; unreported ones are leaks, ended_by context_destroy, under their
//                    lease. One recorded after it began is in a new context that was given
//                    the destroyed one's handle (version 3; earlier journals do not say).
//   UnjournaledLeaks after a ContextDestroy: how many allocations of a lease, made while
//                    the journal was full, went with that context; counted in its ending.
//   Recycled         a compact journal's count of allocations, and their frees, written
//                    over by later ones: counted, but in no timeline or peak.
//   JournalFull      the file could not grow: allocations after it were not recorded.
//   ProcessEnd       the process ended its leases itself: the report is complete.
// At the end of a journal without ProcessEnd (the process was killed, or called _exit),
// whatever is live and unreported is reported per lease with ended_by crash, and the
// process is marked incomplete; unless its writer still runs (writer_liveness.h): then
// nothing has ended, and what is live is counted as live, not leaked. Records after
// ProcessEnd are read too: other threads go on allocating while a process exits, and what
// they allocated after its leases ended (or whose records landed after the lease ending that
// did not count them) is a leak of the process lease's ending at exit.
#include <algorithm>
#include <deque>
#include <map>
#include <queue>
#include <set>

#include "progress.h"
#include "journal_replay.h"
#include "lg_assert.h"
#include "live_bytes.h"
#include "resource_rules.h"
#include "writer_liveness.h"

namespace leaseguard::report {
namespace {

struct LeaseInfo {
  std::string name;
  Policy policy = Policy::Report;
  uint64_t ttl_ms = 0;
  uint64_t begin_ns = 0;
  bool open = true;
};

struct LiveAllocation {
  journal::AllocPayload record;
  bool reported = false;
  size_t ending = 0;       // where it was reported: index into process.leases, and of its leak
  size_t leak = 0;         // in the ending's leaks, or in its reachable allocations if `reachable`
  bool reachable = false;  // reported as still reachable, not as a leak
  uint64_t slot = 0;       // where its record is in the journal
};

struct LeaseBytes {
  uint64_t live = 0;
  uint64_t peak = 0;
  std::vector<std::pair<double, uint64_t>> points;  // thinned timeline of `live`
};

// Keeps at most this many points per lease: when full, every other point is dropped, so
// the plot keeps its shape over the whole run at bounded cost.
constexpr size_t kMaxTimelinePoints = 2048;

void add_point(LeaseBytes &bytes, double ms) {
  if (!bytes.points.empty() && bytes.points.back().first == ms) {
    bytes.points.back().second = bytes.live;
    return;
  }
  if (bytes.points.size() >= kMaxTimelinePoints) {
    size_t kept = 0;
    for (size_t i = 0; i < bytes.points.size(); i += 2) bytes.points[kept++] = bytes.points[i];
    bytes.points.resize(kept);
  }
  bytes.points.emplace_back(ms, bytes.live);
}

class Replay : public journal::JournalVisitor {
 public:
  explicit Replay(ProcessReport &process) : process_(process) {}

  void on_progress(size_t slots_read, size_t) override {
    Progress::instance().set_part_done(static_cast<uint64_t>(slots_read) * journal::kSlotBytes);
  }

  void on_header(const journal::HeaderPayload &header) override {
    start_ns_ = header.start_monotonic_ns;
    last_ns_ = start_ns_;
    process_.pid = header.pid;
    process_.ppid = header.ppid;
    process_.pid_namespace = header.pid_namespace;
    process_.start_realtime_ns = header.start_realtime_ns;
    process_.compact_journal = (header.flags & journal::kHeaderCompact) != 0;
    process_.event_time_resolution_ms = header.event_time_resolution_ns / 1e6;
    frees_at_slots_ = header.version >= journal::kFirstVersionWithFreesAtSlots;
    thread_runs_ = (header.flags & journal::kHeaderThreadRuns) != 0;
  }

  void on_process(const journal::ProcessInfo &info) override {
    process_.pid = info.pid;
    process_.ppid = info.ppid;
    process_.executable = info.executable;
    process_.command = info.argv;
  }

  void on_device(const journal::DevicePayload &device) override {
    if (std::any_of(std::begin(device.uuid), std::end(device.uuid), [](uint8_t byte) { return byte != 0; }))
      process_.device_uuids[device.device] = journal::gpu_uuid_text(device.uuid);
  }

  void on_module(const journal::ModuleInfo &module) override {
    // Interned: every frame in the module shares its path and build-id (text.h).
    const ModuleTexts texts{texts_.intern(module.path), texts_.intern(module.build_id), module.base};
    const bool added = modules_.insert_or_assign(module.module_id, texts).second;
    if (!added) frame_index_.clear();  // an id recorded again: its frames read differently from here on
  }

  // Each distinct frame becomes one entry of the process's frame table, found again by its
  // module record and offset: what a frame reads as depends on nothing else.
  void on_stack(uint32_t stack_id, const std::vector<journal::StackFrame> &frames) override {
    std::vector<uint32_t> stack;
    stack.reserve(frames.size());
    for (const journal::StackFrame &raw : frames) {
      const uint64_t offset = uint64_t{raw.offset_low} | uint64_t{raw.offset_high} << 32;
      auto module = raw.module_id != journal::kNoModule ? modules_.find(raw.module_id) : modules_.end();
      const uint32_t module_id = module != modules_.end() ? raw.module_id : journal::kNoModule;
      auto [known, added] =
          frame_index_.try_emplace(std::pair(module_id, offset), static_cast<uint32_t>(process_.frames.size()));
      if (added) {
        Frame frame;
        frame.offset = offset;
        if (module != modules_.end()) {
          frame.module = module->second.path;
          frame.build_id = module->second.build_id;
          frame.address = module->second.base + frame.offset;
        } else {
          frame.address = frame.offset;
        }
        process_.frames.push_back(std::move(frame));
      }
      stack.push_back(known->second);
    }
    process_.stacks[stack_id] = std::move(stack);
  }

  void on_alloc(const journal::AllocPayload &recorded) override {
    touch(recorded.time_ns);
    // At the time of the records before it, if its own reads earlier: allocation times have
    // the event clock's tick for their grain (event_time_resolution_ns), and it came after
    // them. Its timeline point and its age as a leak are then never out of order.
    journal::AllocPayload alloc = recorded;
    alloc.time_ns = last_ns_;
    if (thread_runs_ && process_.peak_between_threads_ms == 0) note_thread(alloc.thread);
    recently_freed_.erase(alloc.address);  // handed out again: a free of it is no double free
    ++process_.allocations;
    LeaseBytes &bytes = lease_bytes_[alloc.lease_id];
    bytes.live += alloc.bytes;
    bytes.peak = std::max(bytes.peak, bytes.live);
    add_point(bytes, since_start_ms(alloc.time_ns));
    ++fates_.allocated;
    if (alloc.freed_in_place == 0) {
      // A repeated id (a damaged journal) replaces the allocation that had it, as before.
      if (auto repeated = find_live(alloc.id); repeated != live_.end()) {
        if (!repeated->second.reported) ++fates_.replaced;
        live_.erase(repeated);
      }
      const uint64_t place = next_place_++;
      live_.emplace(place, LiveAllocation{alloc, false, 0, 0, false, record_slot()});
      place_of_id_[alloc.id] = place;
      return;
    }
    // Freed, and never to be reported: no lease ended between the allocation and its free.
    const uint32_t api_id = alloc.freed_in_place >> journal::kFreedInPlaceApiShift;
    const Api api = api_from_wire(static_cast<uint16_t>(api_id));  // 7 bits
    const uint32_t distance = alloc.freed_in_place & journal::kFreedInPlaceMaxSlots;
    ++process_.frees;
    ++fates_.freed_in_place;
    pending_frees_.push(
        PendingFree{frees_at_slots_ ? record_slot() + distance : recorded.time_ns + uint64_t{distance} * 1000,
                    alloc.address, api, api_from_wire(alloc.api), alloc.lease_id, alloc.bytes});
  }

  void on_free(const journal::FreePayload &free_record) override {
    touch(free_record.time_ns);
    if (free_record.flags & journal::kFreeReclaimed) {
      auto it = find_live(free_record.id);
      if (it == live_.end() || !it->second.reported) return;
      if (free_record.status != 0) return;  // the driver refused: still allocated
      LeaseEnding &ending = process_.leases[it->second.ending];
      (it->second.reachable ? ending.reachable : ending.leaks)[it->second.leak].reclaimed = true;
      reclaimed_[free_record.id] = it->second.ending;
      release(it);
      return;
    }
    if (free_record.flags & journal::kFreeLate) {
      auto it = reclaimed_.find(free_record.id);
      if (it == reclaimed_.end()) return;
      if (free_record.flags & journal::kFreeOwnerDrop) {  // a handle letting go, as designed
        reclaimed_.erase(it);
        return;
      }
      ++process_.late_frees;
      process_.leases[it->second].late_frees.push_back(make_late_free(free_record, false));
      reclaimed_.erase(it);
      return;
    }
    ++process_.frees;
    auto it = free_record.id != 0 ? find_live(free_record.id) : live_.end();
    if (it == live_.end()) {
      if (free_record.flags & journal::kFreeUnknown) {
        ++process_.unknown_frees;
        if (free_record.flags & journal::kFreeMismatched) note_wrong_family_free_of_live(free_record);
        else note_if_double_free(free_record);
      }
      return;
    }
    remember_freed(it->second.record.address, api_from_wire(free_record.api), api_from_wire(it->second.record.api),
                   free_record.time_ns);
    if (it->second.reported) {
      ++process_.late_frees;
      process_.leases[it->second.ending].late_frees.push_back(make_late_free(free_record, true));
    } else {
      ++fates_.freed_in_time;
    }
    release(it);
  }

  void on_lease_begin(const journal::LeaseBeginPayload &begin, std::string_view name) override {
    touch(begin.time_ns);
    LeaseInfo &lease = leases_[begin.lease_id];
    lease.name = std::string(name);
    lease.policy =
        begin.policy < static_cast<uint8_t>(Policy::Count) ? static_cast<Policy>(begin.policy) : Policy::Report;
    lease.ttl_ms = begin.ttl_ms;
    lease.begin_ns = begin.time_ns;
    lease.open = true;
  }

  void on_lease_end(const journal::LeaseEndPayload &end) override {
    apply_every_free(end.time_ns);  // every free in place came before (see the file comment)
    touch(end.time_ns);
    auto ended_by =
        end.ended_by < static_cast<uint8_t>(EndedBy::Check) ? static_cast<EndedBy>(end.ended_by) : EndedBy::End;
    LeaseEnding ending = make_ending(end.lease_id, ended_by, end.time_ns);
    ending.signal = end.signal;
    ending.unjournaled_allocations = end.unjournaled_allocations;
    ending.unjournaled_bytes = end.unjournaled_bytes;
    const size_t index = process_.leases.size();
    for (auto &[id, allocation] : live_) {
      if (allocation.reported || allocation.record.lease_id != end.lease_id) continue;
      report(allocation, index, ending, end.time_ns);
    }
    leases_[end.lease_id].open = false;
    if (ended_by == EndedBy::Exit) exit_endings_[end.lease_id] = index;
    process_.leases.push_back(std::move(ending));
  }

  void on_context_destroy(const journal::ContextDestroyPayload &destroy) override {
    apply_every_free(destroy.time_ns);
    touch(destroy.time_ns);
    std::map<uint32_t, LeaseEnding> by_lease;
    for (auto it = live_.begin(); it != live_.end();) {
      const journal::AllocPayload &record = it->second.record;
      const Api api = api_from_wire(record.api);
      const bool recorded_before = destroy.begun_at_slot == 0 || it->second.slot < destroy.begun_at_slot;
      if (record.context != destroy.context || !recorded_before ||
          !dies_with_context(api, static_cast<Kind>(record.kind))) {
        ++it;
        continue;
      }
      if (!it->second.reported) {
        auto [entry, inserted] = by_lease.try_emplace(record.lease_id);
        if (inserted) entry->second = make_ending(record.lease_id, EndedBy::ContextDestroy, destroy.time_ns);
        add_leak(entry->second, make_leak(record, destroy.time_ns));
        ++fates_.reported;
      }
      it = release(it);
    }
    // Counts that follow are this destroy's, not an earlier one's of the same handle.
    for (auto it = destroy_endings_.lower_bound({destroy.context, 0});
         it != destroy_endings_.end() && it->first.first == destroy.context;)
      it = destroy_endings_.erase(it);
    for (auto &[lease, ending] : by_lease) {
      destroy_endings_[{destroy.context, lease}] = process_.leases.size();
      process_.leases.push_back(std::move(ending));
    }
    last_destroy_ns_[destroy.context] = destroy.time_ns;
  }

  void on_unjournaled_leaks(const journal::UnjournaledLeaksPayload &leaks) override {
    auto destroyed = last_destroy_ns_.find(leaks.context);
    if (destroyed == last_destroy_ns_.end()) return;  // no destroy before it: a damaged journal
    auto [entry, inserted] = destroy_endings_.try_emplace({leaks.context, leaks.lease_id}, process_.leases.size());
    if (inserted) process_.leases.push_back(make_ending(leaks.lease_id, EndedBy::ContextDestroy, destroyed->second));
    LeaseEnding &ending = process_.leases[entry->second];
    ending.unjournaled_allocations += leaks.allocations;
    ending.unjournaled_bytes += leaks.bytes;
  }

  void on_pool_destroy(const journal::PoolDestroyPayload &destroy) override {
    apply_every_free(destroy.time_ns);
    touch(destroy.time_ns);
    process_.pools_destroyed_in_use.push_back(
        {destroy.pool, since_start_ms(destroy.time_ns), destroy.outstanding_bytes});
  }

  void on_recycled(const journal::RecycledPayload &recycled) override {
    process_.recycled_allocations += recycled.allocations;
    process_.recycled_bytes += recycled.bytes;
    process_.allocations += recycled.allocations;
    process_.frees += recycled.allocations;
  }

  void on_journal_full(const journal::JournalFullPayload &full) override {
    process_.journal_full_ms = since_start_ms(full.time_ns);
    process_.journal_full_error = full.error;
  }

  void on_signal(const journal::SignalPayload &signal) override {
    touch(signal.time_ns);
    process_.signals.push_back({signal.signal, since_start_ms(signal.time_ns), signal.default_action == 0});
    if (signal.default_action != 0) dying_signal_ = signal.signal;
  }

  void on_reachability(const journal::ReachabilityPayload &head, const uint64_t *entries) override {
    process_.classified = true;
    process_.reachability_flags |= head.flags;
    constexpr uint64_t kIdMask = (uint64_t{1} << journal::kReachabilityClassShift) - 1;
    for (uint32_t i = 0; i < head.count; ++i) {
      const auto value = static_cast<uint8_t>(entries[i] >> journal::kReachabilityClassShift);
      classes_[entries[i] & kIdMask] = static_cast<Reachability>(value);
    }
  }

  // A check's classes, over as many records as it took (all with its time), summed by the
  // sizes of the allocations live now; an allocation live and in none of them is unchecked.
  // The last check's verdicts are kept one by one (CheckSnapshot), the one before it by site.
  void on_check(const journal::ReachabilityPayload &head, const uint64_t *entries) override {
    apply_every_free(head.time_ns);  // every free in place came before (see the file comment)
    touch(head.time_ns);
    const double time_ms = since_start_ms(head.time_ns);
    if (process_.checks.empty() || check_time_ns_ != head.time_ns) {
      if (!process_.checks.empty()) {
        previous_check_sites_ = lost_by_site(last_check_);
        previous_check_ns_ = check_time_ns_;
        if (process_.checks.size() == 1) first_check_sites_ = previous_check_sites_;
      }
      last_check_ = CheckSnapshot{};
      LiveCheck check;
      check.time_ms = time_ms;
      for (const auto &[id, allocation] : live_) {
        if (allocation.reported) continue;
        ++check.lost_allocations;
        check.lost_bytes += allocation.record.bytes;
        Leak leak = make_leak(allocation.record, head.time_ns);
        leak.reachability = Reachability::Unchecked;  // until the check's entries say otherwise
        last_check_.index.emplace(allocation.record.id, last_check_.leaks.size());
        last_check_.leaks.push_back(leak);
        last_check_.lease_ids.push_back(allocation.record.lease_id);
      }
      process_.checks.push_back(check);
      check_time_ns_ = head.time_ns;
      if (process_.checks.size() == 1) first_check_ns_ = head.time_ns;
    }
    LiveCheck &check = process_.checks.back();
    check.reachability_flags |= head.flags;
    constexpr uint64_t kIdMask = (uint64_t{1} << journal::kReachabilityClassShift) - 1;
    for (uint32_t i = 0; i < head.count; ++i) {
      const auto value = static_cast<uint8_t>(entries[i] >> journal::kReachabilityClassShift);
      auto known = last_check_.index.find(entries[i] & kIdMask);
      if (known == last_check_.index.end()) continue;  // not live at the check (a damaged journal)
      Leak &leak = last_check_.leaks[known->second];
      if (leak.reachability == Reachability::Reachable) continue;  // counted already
      leak.reachability = static_cast<Reachability>(value);
      if (value != journal::kReachabilityClassReachable) continue;
      ++check.reachable_allocations;
      check.reachable_bytes += leak.bytes;
      --check.lost_allocations;
      check.lost_bytes -= leak.bytes;
    }
  }

  void on_process_end(const journal::ProcessEndPayload &end) override {
    apply_every_free(end.time_ns);
    touch(end.time_ns);
    process_.complete = true;
    process_.dropped_records = end.dropped_records;
    process_.drivers = end.drivers;
    end_remaining(EndedBy::Exit, end.time_ns);
  }

  // Called after the last record. `running`: the journal's writer still runs
  // (writer_liveness.h).
  void finish(bool replaced_by_exec, bool running) {
    apply_every_free(last_ns_);
    if (running && !process_.complete && !replaced_by_exec) {
      // Nothing has ended: what is live is the program's until its lease ends, not a leak.
      process_.running = true;
      for (const auto &[id, allocation] : live_) {
        if (allocation.reported) continue;
        ++process_.live_allocations;
        process_.live_bytes += allocation.record.bytes;
      }
    } else {
      // Without ProcessEnd the process died (or its image was replaced); with it, what is
      // still unreported was allocated while it exited (see the file comment).
      const bool died = !process_.complete && !replaced_by_exec;
      end_remaining(died ? EndedBy::Crash : EndedBy::Exit, last_ns_);
    }
    check_conservation();
    // Not in the conservation law: a check's findings are the state of a moment, not a fate.
    if (process_.running) list_last_check();
    measure_site_growth();
    for (auto &[lease_id, bytes] : lease_bytes_) {
      if (bytes.points.empty()) continue;
      add_point(bytes, since_start_ms(last_ns_));  // hold the last level to the end
      Timeline timeline;
      timeline.lease_id = lease_id;
      auto lease = leases_.find(lease_id);
      timeline.lease_name =
          lease != leases_.end() ? lease->second.name : (lease_id == kProcessLeaseId ? "process" : "lease");
      timeline.points = std::move(bytes.points);
      process_.timelines.push_back(std::move(timeline));
    }
  }

 private:
  // What the last live check found of each allocation live at it, and its lease.
  struct CheckSnapshot {
    std::vector<Leak> leaks;
    std::vector<uint32_t> lease_ids;
    std::unordered_map<uint64_t, size_t> index;  // allocation id -> its place in `leaks`
  };
  // A site: the first stack id seen with its frames (stacks recorded apart, by other threads
  // or modules' records, may have the same frames), and its entry point.
  using SiteKey = std::pair<uint32_t, Api>;
  struct SiteLoss {
    uint64_t bytes = 0;
    uint64_t allocations = 0;
  };

  uint32_t site_stack_of(uint32_t stack_id) {
    auto known = site_stack_.find(stack_id);
    if (known != site_stack_.end()) return known->second;
    std::vector<std::pair<std::string, uint64_t>> frames;
    for (const Frame &frame : process_.stack(stack_id)) frames.emplace_back(frame.module.str(), frame.offset);
    const uint32_t site = site_stack_by_frames_.try_emplace(std::move(frames), stack_id).first->second;
    site_stack_.emplace(stack_id, site);
    return site;
  }

  std::map<SiteKey, SiteLoss> lost_by_site(const CheckSnapshot &check) {
    std::map<SiteKey, SiteLoss> sites;
    for (const Leak &leak : check.leaks) {
      if (leak.reachability == Reachability::Reachable) continue;
      SiteLoss &site = sites[{site_stack_of(leak.stack_id), leak.api}];
      site.bytes += leak.bytes;
      ++site.allocations;
    }
    return sites;
  }

  // A running process: its last check's findings as the report's leaks, one ending (by check)
  // per lease that held memory then.
  void list_last_check() {
    if (process_.checks.empty()) return;
    std::map<uint32_t, LeaseEnding> by_lease;
    for (size_t i = 0; i < last_check_.leaks.size(); ++i) {
      auto [entry, inserted] = by_lease.try_emplace(last_check_.lease_ids[i]);
      if (inserted) entry->second = make_ending(entry->first, EndedBy::Check, check_time_ns_);
      add_leak(entry->second, last_check_.leaks[i]);
    }
    for (auto it = by_lease.rbegin(); it != by_lease.rend(); ++it) process_.leases.push_back(std::move(it->second));
  }

  // Each site lost at the last check, against the check before it and the first: running or
  // not, a report of a process with two checks or more says which sites grew.
  void measure_site_growth() {
    if (process_.checks.size() < 2) return;
    const double seconds = static_cast<double>(check_time_ns_ - first_check_ns_) / 1e9;
    for (const auto &[key, loss] : lost_by_site(last_check_)) {
      SiteGrowth site;
      site.stack_id = key.first;
      site.api = key.second;
      site.lost_bytes = loss.bytes;
      site.lost_allocations = loss.allocations;
      const SiteLoss before = previous_check_sites_.count(key) != 0 ? previous_check_sites_.at(key) : SiteLoss{};
      site.growth_bytes = static_cast<int64_t>(loss.bytes) - static_cast<int64_t>(before.bytes);
      site.growth_allocations = static_cast<int64_t>(loss.allocations) - static_cast<int64_t>(before.allocations);
      const SiteLoss first = first_check_sites_.count(key) != 0 ? first_check_sites_.at(key) : SiteLoss{};
      site.since_first_bytes = static_cast<int64_t>(loss.bytes) - static_cast<int64_t>(first.bytes);
      site.rate_bytes_per_s = seconds > 0 ? static_cast<double>(site.since_first_bytes) / seconds : 0;
      process_.site_growth.push_back(site);
    }
    std::stable_sort(process_.site_growth.begin(), process_.site_growth.end(),
                     [](const SiteGrowth &a, const SiteGrowth &b) { return a.rate_bytes_per_s > b.rate_bytes_per_s; });
    // Every stack of a site finds its growth, not only the one that names it.
    std::map<SiteKey, size_t> index_of;
    for (size_t i = 0; i < process_.site_growth.size(); ++i)
      index_of.emplace(SiteKey{process_.site_growth[i].stack_id, process_.site_growth[i].api}, i);
    for (const auto &[stack_id, site_stack] : site_stack_)
      for (auto it = index_of.lower_bound({site_stack, Api{}}); it != index_of.end() && it->first.first == site_stack;
           ++it)
        process_.add_site_stack(stack_id, it->first.second, it->second);
  }

  // A record with a time: the frees in place that happened before it come first. In a
  // compact journal, a record may have been written over an earlier one in the journal's
  // last slot, after frees that name the slot after it: those come first too. A free that
  // in fact followed a record not written over may then come a record early, so a compact
  // journal's peaks may read low, as documented, never high.
  void touch(uint64_t time_ns) {
    const uint64_t before = frees_at_slots_ ? record_slot() + (process_.compact_journal ? 1 : 0) : time_ns;
    const uint64_t now = std::max(last_ns_, time_ns);
    apply_frees_until(before, now);
    last_ns_ = now;
  }

  // Frees written into their allocations' records, applied once the journal reaches where
  // they happened (the record_slot() they came before; in journals before version 5, their
  // time). Records after a free in place but from before it (other threads' slots) come
  // first, as they happened.
  struct PendingFree {
    uint64_t at;
    uint64_t address;
    Api api;           // the release
    Api allocated_by;  // the allocation's entry point
    uint32_t lease_id;
    uint64_t bytes;
    bool operator>(const PendingFree &other) const { return at > other.at; }
  };

  // now_ns: the time of the record the frees come before, which is theirs from version 5.
  void apply_frees_until(uint64_t at, uint64_t now_ns) {
    while (!pending_frees_.empty() && pending_frees_.top().at <= at) {
      PendingFree free = pending_frees_.top();
      pending_frees_.pop();
      const uint64_t freed_ns = frees_at_slots_ ? std::max(last_ns_, now_ns) : free.at;
      LeaseBytes &bytes = lease_bytes_[free.lease_id];
      bytes.live -= std::min(bytes.live, free.bytes);
      last_ns_ = std::max(last_ns_, freed_ns);
      add_point(bytes, since_start_ms(freed_ns));
      remember_freed(free.address, free.api, free.allocated_by, freed_ns);
    }
  }

  void apply_every_free(uint64_t now_ns) { apply_frees_until(UINT64_MAX, now_ns); }

  double since_start_ms(uint64_t time_ns) const {
    return time_ns > start_ns_ ? static_cast<double>(time_ns - start_ns_) / 1e6 : 0.0;
  }

  LeaseEnding make_ending(uint32_t lease_id, EndedBy ended_by, uint64_t time_ns) {
    LeaseEnding ending;
    ending.id = lease_id;
    ending.ended_by = ended_by;
    // A process that died after a termination signal it left to its default action died of
    // it (leaseguard before Signal records ended leases in the signal handler instead, and
    // said so in LeaseEnd's own signal).
    if (ended_by == EndedBy::Crash) ending.signal = dying_signal_;
    auto it = leases_.find(lease_id);
    if (it != leases_.end()) {
      ending.name = it->second.name;
      ending.policy = it->second.policy;
      ending.ttl_ms = it->second.ttl_ms;
      ending.begin_ms = since_start_ms(it->second.begin_ns);
    } else {
      ending.name = lease_id == kProcessLeaseId ? "process" : "lease";
    }
    ending.end_ms = since_start_ms(time_ns);
    ending.peak_bytes = lease_bytes_[lease_id].peak;
    return ending;
  }

  void report(LiveAllocation &allocation, size_t ending_index, LeaseEnding &ending, uint64_t time_ns) {
    LG_ASSERT(!allocation.reported);  // once
    ++fates_.reported;
    allocation.reported = true;
    allocation.ending = ending_index;
    Leak leak = make_leak(allocation.record, time_ns);
    allocation.reachable = leak.reachability == Reachability::Reachable;
    allocation.leak = allocation.reachable ? ending.reachable.size() : ending.leaks.size();
    add_leak(ending, leak);
  }

  using LiveIterator = std::map<uint64_t, LiveAllocation>::iterator;

  // The live allocation with this id, or live_.end().
  LiveIterator find_live(uint64_t id) {
    auto place = place_of_id_.find(id);
    return place == place_of_id_.end() ? live_.end() : live_.find(place->second);
  }

  // Forgets a live allocation that is gone from the device.
  LiveIterator release(LiveIterator it) {
    LeaseBytes &bytes = lease_bytes_[it->second.record.lease_id];
    bytes.live -= std::min(bytes.live, it->second.record.bytes);
    add_point(bytes, since_start_ms(last_ns_));
    place_of_id_.erase(it->second.record.id);
    return live_.erase(it);
  }

  // The values freed most recently, to tell a double free from a foreign pointer. Bounded:
  // a double free comes soon after the first free in practice, and a journal of a million
  // allocations must not make this grow without end.
  static constexpr size_t kRecentFrees = 1 << 16;
  struct Freed {
    Api api;           // the release that freed it
    Api allocated_by;  // the allocation it freed
    uint64_t time_ns;
  };

  void remember_freed(uint64_t address, Api api, Api allocated_by, uint64_t time_ns) {
    if (recently_freed_.size() >= kRecentFrees) {
      recently_freed_.erase(freed_order_.front());
      freed_order_.pop_front();
    }
    if (recently_freed_.insert_or_assign(address, Freed{api, allocated_by, time_ns}).second)
      freed_order_.push_back(address);
  }

  // A free of a value its own family's release freed already: a double free if this free is
  // of that family too, else a wrong-family free (never the program's to free this way).
  void note_if_double_free(const journal::FreePayload &free_record) {
    auto it = recently_freed_.find(free_record.address);
    const Api api = api_from_wire(free_record.api);
    if (it == recently_freed_.end() || space_of(it->second.api) != space_of(api)) return;
    if (family_of(it->second.api) != family_of(api)) {
      WrongFamilyFree wrong = wrong_family_free(free_record, it->second.allocated_by);
      wrong.freed_ms = since_start_ms(it->second.time_ns);
      process_.wrong_family_frees.push_back(wrong);
      return;
    }
    DoubleFree twice;
    twice.api = api;
    twice.address = free_record.address;
    twice.thread = free_record.thread;
    twice.stack_id = free_record.stack_id;
    twice.time_ms = since_start_ms(free_record.time_ns);
    twice.first_freed_ms = since_start_ms(it->second.time_ns);
    process_.double_frees.push_back(twice);
  }

  // A free of a live value by an entry point that does not free its kind; the tracker wrote
  // the live allocation's entry point in the record's status (journal_format.h).
  void note_wrong_family_free_of_live(const journal::FreePayload &free_record) {
    const Api allocated_by =
        free_record.status > 0 ? api_from_wire(static_cast<uint16_t>(free_record.status)) : Api::Unknown;
    process_.wrong_family_frees.push_back(wrong_family_free(free_record, allocated_by));
  }

  WrongFamilyFree wrong_family_free(const journal::FreePayload &free_record, Api allocated_by) const {
    WrongFamilyFree wrong;
    wrong.api = api_from_wire(free_record.api);
    wrong.allocated_by = allocated_by;
    wrong.address = free_record.address;
    wrong.thread = free_record.thread;
    wrong.stack_id = free_record.stack_id;
    wrong.time_ms = since_start_ms(free_record.time_ns);
    return wrong;
  }

  LateFree make_late_free(const journal::FreePayload &free_record, bool forwarded) const {
    LateFree late;
    late.id = free_record.id;
    late.api = api_from_wire(free_record.api);
    late.address = free_record.address;
    late.thread = free_record.thread;
    late.stack_id = free_record.stack_id;
    late.forwarded = forwarded;
    late.time_ms = since_start_ms(free_record.time_ns);
    return late;
  }

  Leak make_leak(const journal::AllocPayload &record, uint64_t end_ns) const {
    Leak leak;
    leak.id = record.id;
    leak.api = api_from_wire(record.api);
    leak.kind = record.kind < static_cast<uint8_t>(Kind::Count) ? static_cast<Kind>(record.kind) : Kind::Device;
    leak.bytes = record.bytes;
    leak.address = record.address;
    leak.device = record.device;  // NOLINT(bugprone-signed-char-misuse): signed; -1 is unknown
    leak.thread = record.thread;
    leak.age_ms = end_ns > record.time_ns ? (end_ns - record.time_ns) / 1'000'000 : 0;
    leak.stack_id = record.stack_id;
    if (auto found = classes_.find(record.id); found != classes_.end()) leak.reachability = found->second;
    return leak;
  }

  // A leak of `ending`, or an allocation it still reached (not a leak).
  static void add_leak(LeaseEnding &ending, const Leak &leak) {
    (leak.reachability == Reachability::Reachable ? ending.reachable : ending.leaks).push_back(leak);
  }

  // Ends what the journal left open: each open lease, and live allocations of leases that
  // ended earlier but were allocated after their end (attributed to the process lease, to
  // its ending at exit if it had one).
  void end_remaining(EndedBy ended_by, uint64_t time_ns) {
    std::map<uint32_t, LeaseEnding> by_lease;
    for (auto &[id, lease] : leases_) {
      if (!lease.open) continue;
      by_lease.emplace(id, make_ending(id, ended_by, time_ns));
      lease.open = false;
    }
    auto lease_of = [&](const LiveAllocation &allocation) {
      return by_lease.count(allocation.record.lease_id) ? allocation.record.lease_id : kProcessLeaseId;
    };
    auto ended_at_exit = [&](uint32_t lease) {
      return ended_by == EndedBy::Exit && !by_lease.count(lease) && exit_endings_.count(lease) != 0;
    };
    for (auto &[id, allocation] : live_) {
      if (allocation.reported || ended_at_exit(lease_of(allocation))) continue;
      auto [entry, inserted] = by_lease.try_emplace(lease_of(allocation));
      if (inserted) entry->second = make_ending(entry->first, ended_by, time_ns);
    }
    // Newest lease first, as leases end innermost first; the process lease last.
    std::map<uint32_t, size_t> index_of(exit_endings_.begin(), exit_endings_.end());
    for (auto it = by_lease.rbegin(); it != by_lease.rend(); ++it) {
      index_of[it->first] = process_.leases.size();
      if (ended_by == EndedBy::Exit) exit_endings_[it->first] = process_.leases.size();
      process_.leases.push_back(std::move(it->second));
    }
    // Reported like any lease's leaks, with their place kept: a damaged journal may still
    // free them after the process ended.
    for (auto &[id, allocation] : live_) {
      if (allocation.reported) continue;
      const size_t index = index_of[lease_of(allocation)];
      report(allocation, index, process_.leases[index], time_ns);
    }
  }

  // The conservation law: every allocation the journal recorded is, exactly once, freed (in
  // place or by a free record before any lease reported it), reported at one lease ending in
  // one class (an ending's leaks and reachable lists, context destroys included), still live
  // in a running process, or, in a damaged journal, replaced by a record with its id.
  struct Fates {
    uint64_t allocated = 0, freed_in_place = 0, freed_in_time = 0, reported = 0, replaced = 0;
  } fates_;

  void check_conservation() {
    uint64_t listed = 0;
    for (const LeaseEnding &ending : process_.leases) listed += ending.leaks.size() + ending.reachable.size();
    const uint64_t accounted =
        fates_.freed_in_place + fates_.freed_in_time + fates_.reported + fates_.replaced + process_.live_allocations;
    LG_ASSERT(accounted == fates_.allocated);  // the report reader's own bug: found by the tests
    LG_ASSERT(listed == fates_.reported);
    if (accounted == fates_.allocated && listed == fates_.reported) return;
    process_.accounting_problem = "its accounting does not add up: " + std::to_string(fates_.allocated) +
                                  " allocation(s) recorded, " + std::to_string(accounted) +
                                  " freed, reported or live, " + std::to_string(listed) +
                                  " listed at lease endings for " + std::to_string(fates_.reported) +
                                  " reported (leaseguard's bug: please report it)";
  }

  ProcessReport &process_;
  std::unordered_map<uint64_t, Reachability> classes_;  // by allocation id, from Reachability records
  uint64_t check_time_ns_ = 0;                          // the last Check record's: one check's records share it
  CheckSnapshot last_check_;
  std::map<SiteKey, SiteLoss> previous_check_sites_;  // lost at the check before the last
  uint64_t previous_check_ns_ = 0;
  std::map<SiteKey, SiteLoss> first_check_sites_;  // lost at the first check
  uint64_t first_check_ns_ = 0;
  std::unordered_map<uint32_t, uint32_t> site_stack_;  // stack id -> the site's (site_stack_of)
  std::map<std::vector<std::pair<std::string, uint64_t>>, uint32_t> site_stack_by_frames_;
  uint64_t start_ns_ = 0;
  uint64_t last_ns_ = 0;
  int dying_signal_ = 0;        // the last termination signal left to its default action
  bool frees_at_slots_ = true;  // where a free in place happened: a slot (version 5) or a time
  bool thread_runs_ = false;    // each thread wrote in runs of slots of its own (kHeaderThreadRuns)
  uint32_t first_thread_ = 0;   // the first thread seen allocating
  // A second thread allocating: peaks are exact only within each thread from here on.
  void note_thread(uint32_t thread) {
    if (first_thread_ == 0) first_thread_ = thread;
    else if (thread != first_thread_)
      process_.peak_between_threads_ms = static_cast<double>(uint64_t{1} << journal::kThreadRunTickShift) / 1e6;
  }
  struct ModuleTexts {
    Text path;
    Text build_id;
    uint64_t base = 0;
  };
  TextPool texts_;
  std::map<uint32_t, ModuleTexts> modules_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> frame_index_;  // (module id, offset) -> index in process_.frames
  std::map<uint32_t, LeaseInfo> leases_;
  // Live allocations by their place among the journal's allocation records: allocation order.
  // (Ids are unique but are taken in blocks per thread, so across threads they are not in
  // allocation order.)
  std::map<uint64_t, LiveAllocation> live_;
  std::unordered_map<uint64_t, uint64_t> place_of_id_;  // allocation id -> its key in live_
  uint64_t next_place_ = 0;
  std::unordered_map<uint64_t, Freed> recently_freed_;
  std::deque<uint64_t> freed_order_;
  std::map<uint32_t, LeaseBytes> lease_bytes_;
  // Each destroyed context's last destroy: when, and its ending for each lease (by index in
  // process_.leases), which the UnjournaledLeaks records after it add to.
  std::map<uint64_t, uint64_t> last_destroy_ns_;
  std::map<std::pair<uint64_t, uint32_t>, size_t> destroy_endings_;
  std::priority_queue<PendingFree, std::vector<PendingFree>, std::greater<PendingFree>> pending_frees_;
  std::map<uint64_t, size_t> reclaimed_;     // reclaimed allocation id -> its lease ending
  std::map<uint32_t, size_t> exit_endings_;  // lease id -> its ending at exit (index in process_.leases)
};

}  // namespace

bool load_journal_replay(const std::string &path, ProcessReport &process, bool replaced_by_exec, std::string &error) {
  process = ProcessReport{};
  process.journal = path;
  Replay replay(process);
  if (!journal::read_journal(path, replay, process.read_stats, error)) return false;
  replay.finish(replaced_by_exec, process.read_stats.writer_running);
  return true;
}

bool load_journal_bytes(const unsigned char *data, size_t size, ProcessReport &process, std::string &error,
                        bool replaced_by_exec) {
  process = ProcessReport{};
  Replay replay(process);
  if (!journal::read_journal_bytes(data, size, replay, process.read_stats, error)) return false;
  replay.finish(replaced_by_exec, false);
  return true;
}

bool load_journal(const std::string &path, ProcessReport &process, std::string &error) {
  return load_journal_replay(path, process, false, error);
}

}  // namespace leaseguard::report
