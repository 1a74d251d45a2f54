// Implementation of the per-process core.
#include "tracker.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <map>
#include <new>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "authority_protocol.h"
#include "code_generation.h"
#include "event_clock.h"
#include "files.h"
#include "last_stack.h"
#include "lg_assert.h"
#include "pid_namespace.h"
#include "thread_id.h"
#include "log.h"

namespace leaseguard {

namespace {

constexpr int kMaxEnteredLeases = 32;

// Per-thread attribution: the leases this thread entered, innermost last.
thread_local Lease *t_entered[kMaxEnteredLeases];
// Initial-exec, as every thread-local the core reads on an allocation's path (the files that
// declare the others point here): each read is one %fs-relative access, with no call to
// __tls_get_addr. The core's few such variables fit glibc's static TLS reserve even when the
// C++ API library that carries this core is loaded with dlopen.
thread_local int t_entered_depth __attribute__((tls_model("initial-exec"))) = 0;

// Where the classification of a lease this thread is ending puts the classes it journals
// (end_lease): off the allocation path, so the default TLS model is fine.
thread_local std::unordered_map<uint64_t, uint8_t> *t_lease_classes = nullptr;
// Set on the thread running a live check (Tracker::check_now): its classes are journaled as
// a check, and counted here.
struct CheckInProgress {
  size_t entries = 0;
};
thread_local CheckInProgress *t_check = nullptr;

// The calling thread's block of allocation ids (Tracker::take_allocation_id).
struct IdBlock {
  uint64_t next;
  uint64_t end;
  uint64_t tracker_number;  // the tracker it was taken from (Tracker::instance_number_)
};
__thread IdBlock t_ids __attribute__((tls_model("initial-exec")));
constexpr uint64_t kIdsPerBlock = 256;
std::atomic<uint64_t> g_instance_numbers{0};

uint64_t realtime_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return detail::nanoseconds_of(now);
}

// Its buffers are on the heap: the first allocation of a thread with the smallest stack glibc
// allows (16 KiB) opens the journal, and 12 KiB of arrays here overflowed it.
std::vector<unsigned char> process_payload() {
  std::string command(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", command.data(), command.size() - 1);
  command.resize(length > 0 ? static_cast<size_t>(length) : 0);
  command.push_back('\0');
  uint32_t argc = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::vector<char> buffer(8192);
    ssize_t got = read(fd, buffer.data(), buffer.size());
    close(fd);
    if (got > 0) {
      command.append(buffer.data(), static_cast<size_t>(got));
      if (command.back() != '\0') command.push_back('\0');
      for (ssize_t i = 0; i < got; ++i) argc += buffer[static_cast<size_t>(i)] == '\0';
    }
  }
  journal::ProcessPayload header{};
  header.pid = getpid();
  header.ppid = getppid();
  header.argc = argc;
  header.command_bytes = static_cast<uint32_t>(command.size());
  std::vector<unsigned char> payload(sizeof header + command.size());
  std::memcpy(payload.data(), &header, sizeof header);
  std::memcpy(payload.data() + sizeof header, command.data(), command.size());
  return payload;
}

}  // namespace

// A wall-clock deadline on the monotonic clock the watchdog sleeps on; one already past
// fires at once.
static uint64_t deadline_as_monotonic(std::optional<uint64_t> deadline_unix_ns, uint64_t now_monotonic_ns,
                                      uint64_t now_realtime_ns) {
  if (!deadline_unix_ns) return 0;
  if (*deadline_unix_ns <= now_realtime_ns) return std::max<uint64_t>(now_monotonic_ns, 1);
  uint64_t remaining = *deadline_unix_ns - now_realtime_ns;
  return remaining > UINT64_MAX - now_monotonic_ns ? UINT64_MAX : now_monotonic_ns + remaining;
}

Tracker::Tracker(Options options)
    : options_(std::move(options)),
      start_monotonic_ns_(monotonic_ns()),
      start_realtime_ns_(realtime_ns()),
      instance_number_(g_instance_numbers.fetch_add(1, std::memory_order_relaxed) + 1),
      leases_(
          start_monotonic_ns_, options_.ttl_ms, options_.on_expiry, [this](Lease &lease) { on_expired(lease); },
          deadline_as_monotonic(options_.deadline_unix_ns, start_monotonic_ns_, start_realtime_ns_)) {
  choose_event_clock();
  // Live checks this often: nothing to classify before the journal opens (check_now says -1).
  if (options_.check_every_ms != 0 && options_.reachability != ReachabilityMode::Off)
    leases_.check_every(options_.check_every_ms * 1'000'000, [this] { check_now(); });
}

Tracker::~Tracker() {
  if (InstanceSlot::load() == this) InstanceSlot::store(nullptr);
}

Tracker *Tracker::install(const Options &options) {
  static std::mutex install_mutex;
  std::lock_guard lock(install_mutex);
  if (auto *existing = static_cast<Tracker *>(InstanceSlot::load())) return existing;
  auto *tracker = new Tracker(options);  // lives until the process ends
  InstanceSlot::store(tracker);
  return tracker;
}

void Tracker::prepare_fork() noexcept {
  if (auto *tracker = static_cast<Tracker *>(InstanceSlot::load())) tracker->leases_.lock_for_fork();
}

void Tracker::parent_after_fork() noexcept {
  if (auto *tracker = static_cast<Tracker *>(InstanceSlot::load())) tracker->leases_.unlock_after_fork();
}

void Tracker::reinstall_after_fork(bool close_descriptor) noexcept {
  // The parent's: this process's slot was wiped (instance_slot.h).
  auto *parent = static_cast<Tracker *>(InstanceSlot::last_stored());
  const int entered_depth = t_entered_depth;
  t_entered_depth = 0;
  forget_thread_id();
  if (parent == nullptr) return;
  // The parent's instance is abandoned, not destroyed: its locks may be held by threads that
  // do not exist in this process. Its journal mapping is the parent's file; drop it.
  parent->journal_.abandon(close_descriptor);
  Options options = parent->options_;
  auto *child = new (std::nothrow) Tracker(options);
  if (child == nullptr) {
    // No memory for a core of its own: the child records nothing rather than into its parent's.
    InstanceSlot::store(nullptr);
    return;
  }
  child->excluded_ = parent->excluded_;
  child->backend_ = parent->backend_;
  // The leases open at the fork, read under the lock prepare_fork took (only after fork():
  // a raw clone() ran no handler, and another parent thread may have been changing them).
  if (close_descriptor && parent->leases_.held_for_fork()) {
    try {
      for (const Lease *lease : parent->leases_.open_at_fork()) child->leases_.inherit(*lease);
    } catch (...) {
      log_warning("out of memory after fork; the child's allocations go to its process lease");
    }
    // The forking thread's entered leases, as the child's copies.
    for (int i = 0; i < entered_depth && i < kMaxEnteredLeases; ++i)
      if (Lease *own = child->leases_.find(t_entered[i]->id); own != nullptr && own != &child->leases_.process_lease())
        t_entered[t_entered_depth++] = own;
  }
  InstanceSlot::store(child);
}

Tracker *Tracker::instance_in_new_process() noexcept {
  // No fork handler ran: the descriptor table may still be the parent's (CLONE_FILES).
  if (InstanceSlot::was_wiped() && InstanceSlot::claim()) reinstall_after_fork(false);
  return static_cast<Tracker *>(InstanceSlot::load());
}

void Tracker::suspend_threads() noexcept {
  journal_.suspend_prefaulting();
  leases_.suspend_watchdog();
  control_.suspend();
}

void Tracker::resume_threads() noexcept {
  leases_.resume_watchdog();
  control_.resume();
}

bool Tracker::open_journal(std::string &error) {
  const int directory = open_output_directory(options_.out_dir, error);
  if (directory < 0) return false;
  const bool opened = open_journal_in(directory, absolute_path(options_.out_dir), error);
  close(directory);
  return opened;
}

bool Tracker::open_journal_in(int directory, const std::string &directory_path, std::string &error) {
  journal::HeaderPayload header{};
  std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
  const bool compact = options_.journal_mode == JournalMode::Compact;
  header.version = journal::kVersion;
  header.slot_bytes = journal::kSlotBytes;
  header.pid = getpid();
  header.ppid = getppid();
  header.start_realtime_ns = start_realtime_ns_;
  header.start_monotonic_ns = start_monotonic_ns_;
  header.flags = (compact ? journal::kHeaderCompact : 0) | journal::kHeaderThreadRuns;
  header.event_time_resolution_ns = event_clock_resolution_ns();
  header.pid_namespace = pid_namespace_of();
  const std::string stem = (options_.run_id.empty() ? "leaseguard" : options_.run_id) + "." +
                           journal_process_name(getpid(), header.pid_namespace, options_.run_pid_namespace);
  // Never overwrite: an exec'd image of the same pid, or a recycled pid, gets the next name.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::string name = stem + (attempt == 0 ? "" : "." + std::to_string(attempt)) + ".journal";
    const std::string path = directory_path + "/" + name;
    std::string attempt_error;
    if (journal_.open_in(directory, name, path, header, attempt_error)) {
      std::vector<unsigned char> process = process_payload();
      journal_.append(journal::RecordType::Process, process.data(), process.size());
      write_lease_begin(leases_.process_lease());
      // The leases a forked child inherited begin in its journal when it opens.
      const std::vector<Lease *> open = leases_.open_leases();  // newest first
      for (auto lease = open.rbegin(); lease != open.rend(); ++lease)
        if ((*lease)->inherited) write_lease_begin(**lease);
      log_debug("journal %s", path.c_str());
      return true;
    }
    if (errno != EEXIST) {
      error = attempt_error;
      return false;
    }
    struct stat existing;
    if (fstatat(directory, name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(existing.st_mode)) {
      // Someone planted a link where our journal goes: refuse rather than pick another name.
      error = path + " is a symbolic link; refusing to write a journal there";
      return false;
    }
  }
  error = "too many journals named " + directory_path + "/" + stem + ".*.journal";
  return false;
}

bool Tracker::open_journal_once() noexcept {
  std::lock_guard lock(journal_open_mutex_);
  const int state = journal_state_.load(std::memory_order_relaxed);
  if (state != 0) return state == 1;
  std::string error;
  bool opened = false;
  try {
    opened = open_journal(error);
  } catch (...) {
    error = "out of memory";
  }
  if (!opened) log_warning("%s; continuing without recording", error.c_str());
  journal_state_.store(opened ? 1 : 2, std::memory_order_release);
  if (opened) {
    std::string control_error;
    const bool of_authority = !options_.authority_lease.empty();
    ControlChannel::ReclaimHandler reclaim;
    if (of_authority) reclaim = [this](uint32_t request) { answer_authority_reclaim(request); };
    if (!control_.start(
            journal_.path(),
            [this] { return check_now() == 0 ? authority::kCheckDone : authority::kCheckNotClassified; },
            std::move(reclaim), control_error)) {
      if (of_authority)
        log_warning("%s; lease %s cannot ask this process to give its memory back, only end it", control_error.c_str(),
                    options_.authority_lease.c_str());
      else log_warning("%s; `leaseguard check %d` cannot reach this process", control_error.c_str(), getpid());
    }
  }
  if (auto callback = journal_opened_callback_.load(std::memory_order_acquire); opened && callback != nullptr)
    callback();
  return opened;
}

void Tracker::write_lease_begin(const Lease &lease) noexcept {
  char buffer[sizeof(journal::LeaseBeginPayload) + 256];
  journal::LeaseBeginPayload begin{};
  begin.lease_id = lease.id;
  begin.ttl_ms = lease.ttl_ms;
  begin.time_ns = lease.begin_ns;
  begin.policy = static_cast<uint8_t>(lease.policy);
  size_t name_bytes = lease.name.size() < 256 ? lease.name.size() : 256;
  begin.name_bytes = static_cast<uint32_t>(name_bytes);
  std::memcpy(buffer, &begin, sizeof begin);
  // The name's bytes, no terminator: the record says how many.
  std::memcpy(buffer + sizeof begin, lease.name.data(), name_bytes);  // NOLINT(bugprone-not-null-terminated-result)
  journal_.append(journal::RecordType::LeaseBegin, buffer, sizeof begin + name_bytes);
}

Lease &Tracker::current_lease() noexcept {
  LG_ASSERT(t_entered_depth >= 0 && t_entered_depth <= kMaxEnteredLeases);
  for (int i = t_entered_depth - 1; i >= 0; --i)
    if (!t_entered[i]->ended.load(std::memory_order_relaxed)) return *t_entered[i];
  return leases_.process_lease();
}

uint32_t Tracker::capture_and_intern_stack(const WalkStart &start) noexcept {
  const auto max_frames = static_cast<size_t>(options_.stack_depth);
  const uint64_t code_now = code_generation();
  ThisThreadsLastStack last;
  LastStacks *kept = last.get();
  if (kept != nullptr) {
    // The walk would read, and list, exactly what it did last time from here.
    if (const LastStack *again = kept->find(instance_number_, max_frames, code_now, start)) return again->stack_id;
  }
  return walk_and_intern(start, kept != nullptr ? &kept->make_room() : nullptr, max_frames, code_now);
}

// Out of line: the walk's room for frames and its registers are paid only when the thread's
// last stacks do not hold this one.
__attribute__((noinline)) uint32_t Tracker::walk_and_intern(const WalkStart &start, LastStack *seen, size_t max_frames,
                                                            uint64_t code_now) noexcept {
  uintptr_t frames[kMaxStackDepth];
  const size_t depth = seen != nullptr ? capture_stack_traced(frames, max_frames, excluded_, start, seen->trace)
                                       : capture_stack(frames, max_frames, excluded_, start);
  uint32_t id = 0;
  try {
    id = stacks_.intern(frames, depth, journal_);
  } catch (...) {
    id = 0;  // out of memory: the allocation is still recorded, without its stack
  }
  if (seen != nullptr) {
    seen->tracker_number = instance_number_;
    seen->max_frames = max_frames;
    seen->code_generation = code_now;
    seen->stack_id = id;
  }
  return id;
}

// Inlined into on_alloc, its one caller.
__attribute__((always_inline)) inline uint64_t Tracker::take_allocation_id() noexcept {
  IdBlock &ids = t_ids;
  if (ids.tracker_number != instance_number_ || ids.next == ids.end) {
    ids.next = next_allocation_id_.fetch_add(kIdsPerBlock, std::memory_order_relaxed);
    ids.end = ids.next + kIdsPerBlock;
    ids.tracker_number = instance_number_;
  }
  return ids.next++;
}

void Tracker::on_alloc(const AllocationEvent &event) noexcept {
  const bool journaling = ensure_journal();
  Lease *named = event.lease_id != 0 && event.lease_id <= UINT32_MAX
                     ? leases_.find(static_cast<uint32_t>(event.lease_id))
                     : nullptr;
  Lease &lease = named != nullptr ? *named : current_lease();
  LiveRecord record;
  record.address = event.address;
  record.lease_id = lease.id;
  record.api = event.api;
  journal::AllocPayload alloc{};
  alloc.id = take_allocation_id();
  alloc.time_ns = event_clock_ns();
  alloc.stack_id = journaling ? capture_and_intern(event.caller) : 0;

  if (reclaimed_count_.load(std::memory_order_acquire) != 0) note_value_given_again(event.api, event.address);

  alloc.address = record.address;
  alloc.bytes = event.bytes;
  alloc.context = event.context;
  alloc.thread = this_thread_id();
  alloc.api = static_cast<uint16_t>(record.api);
  alloc.kind = static_cast<uint8_t>(event.kind);
  // The journal's device is one byte; the side store keeps what a reclaim needs either way.
  alloc.device = static_cast<int8_t>(event.device >= -1 && event.device <= 127 ? event.device : -1);
  // Set before the table's lock, changed under it only when the lease has just ended: the
  // record is copied into the journal with wide loads right after, and a field stored just
  // before them could not be forwarded to them (a stall of ~15 cycles every allocation).
  alloc.lease_id = record.lease_id;
  try {
    // The record is written while the table holds the address's lock, so a free of the same
    // address on another thread is always journaled after it. Ending a lease marks it ended
    // before it scans the table; an allocation that completes after that belongs to the
    // process lease, so every allocation is counted by exactly one lease ending.
    std::optional<LiveRecord> displaced = table_.insert(
        record, counts_references(record.api), [&](LiveRecord &stored, const std::optional<LiveRecord> &replaced) {
          // The driver handed this value out again, so the allocation that held it was freed by
          // a path leaseguard did not see: closed first, where that free happened.
          if (replaced && journaling) write_implicit_free(*replaced);
          if (stored.lease_id != kProcessLeaseId && lease.ended.load()) {
            stored.lease_id = kProcessLeaseId;
            alloc.lease_id = kProcessLeaseId;
          }
          stored.barrier = barriers_.load(std::memory_order_acquire);
          stored.details_at = records_.write(alloc, event.device, stored.barrier, journaling);
        });
    if (journal_.wants_prefaulter()) journal_.start_prefaulting();  // once, after a megabyte
    if (displaced) records_.forget(*displaced);
  } catch (...) {
    log_debug("out of memory recording an allocation");
  }
}

// The rare paths of on_alloc, out of line so that its common path keeps its registers.

void Tracker::note_value_given_again(Api api, uint64_t value) noexcept {
  std::lock_guard lock(reclaimed_mutex_);
  auto [first, last] = reclaimed_.equal_range(HandleKey{value, space_of(api), 0});
  if (program_chooses_value(api)) {
    // Registering the buffer again: the program is done with the reclaimed registration.
    reclaimed_count_.fetch_sub(static_cast<size_t>(std::distance(first, last)), std::memory_order_release);
    reclaimed_.erase(first, last);
  } else {
    for (auto it = first; it != last; ++it) it->second.reissued = true;
  }
}

void Tracker::write_implicit_free(const LiveRecord &displaced) noexcept {
  write_free(records_.details(displaced).id, displaced.address, Api::Unknown, journal::kFreeImplicit, 0, 0);
}

void Tracker::write_free(uint64_t id, uint64_t address, Api api, uint8_t flags, uint32_t stack_id,
                         int32_t status) noexcept {
  journal::FreePayload free_record{};
  free_record.id = id;
  free_record.address = address;
  free_record.time_ns = event_clock_ns();
  free_record.thread = this_thread_id();
  free_record.api = static_cast<uint16_t>(api);
  free_record.flags = flags;
  free_record.stack_id = stack_id;
  free_record.status = status;
  journal_.append(journal::RecordType::Free, &free_record, sizeof free_record);
}

void Tracker::write_free_record_of(const LiveRecord &record, Api api) noexcept {
  write_free(records_.details(record).id, record.address, api, 0, 0, 0);
}

void Tracker::write_unexpected_free(const LiveRecord *late, uint64_t value, Api api, int unknown_flags,
                                    Api mismatched) noexcept {
  if (late != nullptr) write_free(records_.details(*late).id, value, api, 0, capture_and_intern(), 0);
  if (unknown_flags != 0)
    write_free(0, value, api, static_cast<uint8_t>(unknown_flags), capture_and_intern(),
               static_cast<int32_t>(mismatched));
}

bool Tracker::take_late_free(Api api, uint64_t value, bool owner_drop, bool journaling) noexcept {
  std::optional<Reclaimed> late;
  {
    std::lock_guard lock(reclaimed_mutex_);
    auto it = reclaimed_.find(HandleKey{value, space_of(api), 0});
    if (it == reclaimed_.end()) return false;
    late = it->second;
    reclaimed_.erase(it);
    reclaimed_count_.fetch_sub(1, std::memory_order_release);
  }
  // Already given back to the device: passing this free on would be a double free (or, if
  // the value was handed out again, would free someone else's memory).
  if (journaling) {
    if (owner_drop) write_free(late->id, value, api, journal::kFreeLate | journal::kFreeOwnerDrop, 0, 0);
    else write_free(late->id, value, api, journal::kFreeLate, capture_and_intern(), 0);
  }
  return true;
}

FreeOutcome Tracker::on_free(Api api, uint64_t value, bool owner_drop) noexcept {
  const bool journaling = journal_state_.load(std::memory_order_acquire) == 1;
  const Space space = space_of(api);
  if (swallow_late_free(api, value, owner_drop, journaling)) return FreeOutcome::Reclaimed;
  bool late_free = false;
  bool absent = false;
  int unknown_flags = 0;
  Api mismatched = Api::Unknown;  // the live allocation this entry point does not free
  std::optional<LiveRecord> record = table_.remove(
      space, value, [&](const LiveRecord &live) { return frees(api, live.api); },
      [&](const LiveRecord *removed, bool accepted) __attribute__((always_inline)) {
        absent = removed == nullptr;
        if (!journaling) return;
        if (removed == nullptr || !accepted) {
          unknown_flags = journal::kFreeUnknown | (removed ? journal::kFreeMismatched : 0);
          if (removed != nullptr) mismatched = removed->api;
        } else if (removed->reported) {
          late_free = true;  // journaled below, with the stack that freed it late
        } else if (!records_.free_in_place(*removed, api, barriers_.load(std::memory_order_acquire))) {
          write_free_record_of(*removed, api);
        }
      });
  // Written after the lock is released, with the stack that freed: a late free, and a free
  // leaseguard did not expect (a double free, a foreign pointer, the wrong entry point) are
  // rare and worth their stack. The driver cannot hand a live value out again before this
  // free reaches it, so the order stays right.
  // A lease ending on another thread may have just taken the value out of the table to
  // reclaim it; it registered the value as reclaimed in the same step, so look once more.
  if (absent && swallow_late_free(api, value, owner_drop, journaling)) return FreeOutcome::Reclaimed;
  if (late_free || unknown_flags != 0)
    write_unexpected_free(late_free ? &*record : nullptr, value, api, unknown_flags, mismatched);
  if (!record) return FreeOutcome::Unknown;
  records_.forget(*record);
  return FreeOutcome::Known;
}

ContextDestroyMark Tracker::before_context_destroy() noexcept {
  ContextDestroyMark mark;
  mark.barrier = raise_barrier();
  mark.slot = std::max<uint64_t>(journal_.next_slot(), 1);
  return mark;
}

void Tracker::on_context_destroyed(Api api, uint64_t context, int32_t device, const ContextDestroyMark &mark) noexcept {
  raise_barrier();
  // Recorded before the destroy began: by its journal slot where it has one, as the replay
  // decides, so the two always agree; else by the barrier count it was recorded under.
  auto recorded_before = [&](const LiveRecord &record) {
    return record.in_journal() ? record.details_at < mark.slot
                               : static_cast<int32_t>(record.barrier - mark.barrier) < 0;
  };
  std::vector<LiveRecord> freed;
  try {
    freed = table_.remove_if([&](const LiveRecord &record) {
      if (!recorded_before(record)) return false;
      const AllocationDetails cold = records_.details(record);
      return cold.context == context && dies_with_context(record.api, cold.kind);
    });
  } catch (...) {
  }
  // Leaks the replay cannot see go with the context (made while the journal was full), by
  // lease: counted before their side-store entries are given back.
  std::map<uint32_t, Unjournaled> unjournaled;
  try {
    for (const LiveRecord &record : freed)
      if (!record.reported && record.in_side_store()) unjournaled[record.lease_id].count(record, records_);
  } catch (...) {
    unjournaled.clear();  // out of memory: the destroy is still recorded, without the counts
  }
  for (const LiveRecord &record : freed) records_.forget(record);
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  journal::ContextDestroyPayload destroy{};
  destroy.context = context;
  destroy.time_ns = monotonic_ns();
  destroy.api = static_cast<uint16_t>(api);
  destroy.device = device;
  destroy.begun_at_slot = mark.slot;
  journal_.append(journal::RecordType::ContextDestroy, &destroy, sizeof destroy);
  for (const auto &[lease_id, count] : unjournaled) {
    journal::UnjournaledLeaksPayload leaks{};
    leaks.context = context;
    leaks.lease_id = lease_id;
    leaks.allocations = count.allocations;
    leaks.bytes = count.bytes;
    journal_.append(journal::RecordType::UnjournaledLeaks, &leaks, sizeof leaks);
  }
  size_t leaked = 0;
  for (const LiveRecord &record : freed) leaked += record.reported ? 0 : 1;
  if (leaked > 0)
    log_debug("context %#llx destroyed with %zu live allocation(s)", static_cast<unsigned long long>(context), leaked);
}

void Tracker::on_pool_destroyed_in_use(uint64_t pool, uint64_t outstanding_bytes) noexcept {
  log_debug("memory pool %#llx destroyed with %llu bytes still allocated from it",
            static_cast<unsigned long long>(pool), static_cast<unsigned long long>(outstanding_bytes));
  raise_barrier();
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  journal::PoolDestroyPayload destroy{};
  destroy.pool = pool;
  destroy.time_ns = monotonic_ns();
  destroy.outstanding_bytes = outstanding_bytes;
  journal_.append(journal::RecordType::PoolDestroy, &destroy, sizeof destroy);
}

uint64_t Tracker::lease_begin(const char *name, uint64_t ttl_ms, Policy policy, bool classify_at_end) noexcept {
  try {
    Lease &lease = leases_.begin(name != nullptr && *name != '\0' ? name : "lease", ttl_ms, policy, monotonic_ns(),
                                 classify_at_end);
    if (ensure_journal()) write_lease_begin(lease);
    return lease.id;
  } catch (...) {
    return 0;
  }
}

void Tracker::write_lease_end(const Lease &lease, EndedBy ended_by, size_t leaked,
                              const Unjournaled &unjournaled) noexcept {
  // A lease that ends before anything was allocated (a deadline already past, a short
  // time-to-live) opens the journal, as its beginning does: its ending is part of the
  // report. Not at exit: a process that recorded nothing leaves no journal.
  const bool journaling =
      ended_by == EndedBy::Exit ? journal_state_.load(std::memory_order_acquire) == 1 : ensure_journal();
  if (!journaling) return;
  journal::LeaseEndPayload end{};
  end.lease_id = lease.id;
  end.ended_by = static_cast<uint8_t>(ended_by);
  end.time_ns = monotonic_ns();
  end.leaked_allocations = leaked;
  end.unjournaled_allocations = unjournaled.allocations;
  end.unjournaled_bytes = unjournaled.bytes;
  journal_.append(journal::RecordType::LeaseEnd, &end, sizeof end);
}

size_t Tracker::end_lease(Lease &lease, EndedBy ended_by, bool reclaim_anyway, GivenBack *given_back) noexcept {
  LG_ASSERT(lease.ended.load() && !lease.settled.load());  // try_end chose this caller, once
  // At exit the process gives everything back anyway, and the driver may already be going
  // away: reclaim applies to leases that end or expire while the program runs.
  const bool reclaim =
      (lease.policy == Policy::Reclaim || reclaim_anyway) && ended_by != EndedBy::Exit && backend_ != nullptr;
  lease.ending_thread.store(this_thread_id(), std::memory_order_relaxed);
  // Classified first, while what the lease still owns is live (at exit: reachability_scan.h).
  // The classes it journals are kept here too, by allocation id, so that what this returns
  // and logs counts lost and reachable apart as the report does.
  const bool classify =
      ended_by != EndedBy::Exit && options_.reachability != ReachabilityMode::Off &&
      (options_.reachability == ReachabilityMode::Leases || lease.id == kProcessLeaseId || lease.classify_at_end);
  std::unordered_map<uint64_t, uint8_t> classes;
  if (auto classifier = lease_classifier_.load(std::memory_order_acquire); classify && classifier != nullptr) {
    t_lease_classes = &classes;
    classifier(*this, lease.id, lease.classify_at_end);
    t_lease_classes = nullptr;
  }
  auto is_reachable = [&](uint64_t id) {
    auto found = classes.find(id);
    return found != classes.end() && found->second == journal::kReachabilityClassReachable;
  };
  raise_barrier();
  size_t owned = 0, reachable = 0;
  if (!reclaim) {
    Unjournaled unjournaled;
    owned = table_.mark_lease_reported(lease.id, [&](const LiveRecord &record) {
      unjournaled.count(record, records_);
      if (!classes.empty() && is_reachable(records_.details(record).id)) ++reachable;
    });
    write_lease_end(lease, ended_by, owned, unjournaled);
  } else {
    std::vector<HandleRecord> records = take_for_reclaim(lease);
    owned = records.size();
    Unjournaled unjournaled;
    for (const HandleRecord &record : records) {
      unjournaled.count(record, records_);
      if (is_reachable(record.id)) ++reachable;
    }
    write_lease_end(lease, ended_by, owned, unjournaled);  // reported first, then given back
    const GivenBack given = give_back(records);
    if (given_back != nullptr) {
      given_back->allocations += given.allocations;
      given_back->device_bytes += given.device_bytes;
      given_back->refused += given.refused;
    }
  }
  const size_t leaked = owned - reachable;
  lease.settled.store(true, std::memory_order_release);
  if (owned > 0 && ended_by != EndedBy::Exit) {
    const char *how = ended_by == EndedBy::Expiry ? "expired" : "ended";
    if (reachable == 0)
      log_info("lease %u \"%s\" %s with %zu leaked allocation(s)%s", lease.id, lease.name.c_str(), how, leaked,
               reclaim ? ", reclaimed" : "");
    else
      log_info("lease %u \"%s\" %s with %zu leaked allocation(s) and %zu still reachable%s", lease.id,
               lease.name.c_str(), how, leaked, reachable, reclaim ? ", all reclaimed" : "");
  }
  // Abort fires on what the lease still owns, reachable or not (docs/leases.md).
  if (lease.policy == Policy::Abort && owned > 0 && ended_by != EndedBy::Exit) {
    log_warning("lease %u \"%s\" %s with leaks and policy abort", lease.id, lease.name.c_str(),
                ended_by == EndedBy::Expiry ? "expired" : "ended");
    // Also on leaseguard's watchdog thread, which blocks every signal (background_thread.h).
    sigset_t abort_signal;
    sigemptyset(&abort_signal);
    sigaddset(&abort_signal, SIGABRT);
    pthread_sigmask(SIG_UNBLOCK, &abort_signal, nullptr);
    std::raise(SIGABRT);
  }
  return leaked;
}

std::vector<HandleRecord> Tracker::take_for_reclaim(const Lease &lease) noexcept {
  std::vector<HandleRecord> records;
  try {
    // Each record leaves the table and is registered as reclaimed in one step, under its
    // shard's lock: a free of it by the program meanwhile either finds it live (and reaches
    // the driver first; the reclaim then never sees it) or finds it reclaimed (and is
    // swallowed), never neither (which would free it twice).
    table_.extract_if([&](const LiveRecord &record) {
      if (record.lease_id != lease.id || record.reported) return false;
      records.push_back(records_.full(record));
      try {
        std::lock_guard lock(reclaimed_mutex_);
        reclaimed_.emplace(HandleKey{record.address, space_of(record.api), 0},
                           Reclaimed{records.back().id, lease.id, false});
        reclaimed_count_.store(reclaimed_.size(), std::memory_order_release);
      } catch (...) {
        records.pop_back();  // stays live, and unreclaimed
        throw;
      }
      return true;
    });
  } catch (...) {
    log_warning("out of memory reclaiming lease %u; its leaks stay allocated", lease.id);
  }
  return records;
}

Tracker::GivenBack Tracker::give_back(std::vector<HandleRecord> &records) noexcept {
  // Newest first, as a program unwinding its own allocations would free them: by time,
  // which has the event clock's tick for its grain; within a tick by journal slot, which is
  // in allocation order across threads; records the journal could not take by id, which
  // is in allocation order within a thread.
  auto newest_first = [](const HandleRecord &record) {
    return std::tuple(record.time_ns, record.in_journal(), record.in_journal() ? record.details_at : record.id);
  };
  std::sort(records.begin(), records.end(),
            [&](const HandleRecord &a, const HandleRecord &b) { return newest_first(a) > newest_first(b); });
  GivenBack given;
  for (HandleRecord &record : records) {
    const int status = backend_->release(record);
    if (journal_state_.load(std::memory_order_acquire) == 1)
      write_free(record.id, record.address, Api::Unknown, journal::kFreeReclaimed, 0, status);
    if (status == 0) {
      ++given.allocations;
      if (holds_device_memory(record.kind)) given.device_bytes += record.bytes;
      records_.forget(record);
    } else {
      ++given.refused;
      keep_after_failed_reclaim(record, status);
    }
  }
  return given;
}

void Tracker::keep_after_failed_reclaim(HandleRecord &record, int status) noexcept {
  // Still allocated on the device: the program's own free, when it comes, must reach the
  // driver. It stays a reported leak.
  log_warning("reclaiming %#llx (%llu bytes) failed with driver status %d; it stays allocated",
              static_cast<unsigned long long>(record.address), static_cast<unsigned long long>(record.bytes), status);
  {
    std::lock_guard lock(reclaimed_mutex_);
    auto [first, last] = reclaimed_.equal_range(HandleKey{record.address, space_of(record.api), 0});
    for (auto it = first; it != last; ++it) {
      if (it->second.id != record.id) continue;
      reclaimed_.erase(it);
      reclaimed_count_.fetch_sub(1, std::memory_order_release);
      break;
    }
  }
  record.reported = true;
  table_.insert(record, counts_references(record.api), [](LiveRecord &, const std::optional<LiveRecord> &) {});
}

int Tracker::lease_end(uint64_t lease_id) noexcept {
  if (lease_id == 0 || lease_id > UINT32_MAX) return -1;
  Lease *lease = leases_.find(static_cast<uint32_t>(lease_id));
  if (lease == nullptr || !LeaseRegistry::try_end(*lease)) return -1;
  size_t leaked = end_lease(*lease, EndedBy::End);
  return leaked > static_cast<size_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(leaked);
}

int Tracker::lease_enter(uint64_t lease_id) noexcept {
  if (lease_id == 0 || lease_id > UINT32_MAX) return -1;
  Lease *lease = leases_.find(static_cast<uint32_t>(lease_id));
  if (lease == nullptr || lease->ended.load() || t_entered_depth == kMaxEnteredLeases) return -1;
  LG_ASSERT(lease->id == lease_id);
  t_entered[t_entered_depth++] = lease;
  LG_ASSERT(t_entered_depth <= kMaxEnteredLeases);
  return 0;
}

int Tracker::lease_leave() noexcept {
  if (t_entered_depth == 0) return -1;
  --t_entered_depth;
  LG_ASSERT(t_entered_depth >= 0);
  return 0;
}

LeaseState Tracker::lease_state(uint64_t lease_id) noexcept {
  if (lease_id == 0 || lease_id > UINT32_MAX) return LeaseState::Unknown;
  Lease *lease = leases_.find(static_cast<uint32_t>(lease_id));
  if (lease == nullptr) return LeaseState::Unknown;
  if (lease->ended.load(std::memory_order_acquire) && !lease->settled.load(std::memory_order_acquire) &&
      lease->ending_thread.load(std::memory_order_relaxed) != this_thread_id()) {
    // Another thread is ending it (an expiry reclaiming its leaks): answer when it is done,
    // so that a program told "expired" can rely on the memory being given back already.
    // That takes as long as the driver's frees: after a few yields, wait asleep. Polled,
    // not notified: a signal handler ending leases at exit can set `settled` but not wake.
    for (int yields = 0; !lease->settled.load(std::memory_order_acquire);) {
      if (yields < 64) {
        ++yields;
        sched_yield();
      } else {
        const timespec pause{0, 200'000};
        nanosleep(&pause, nullptr);
      }
    }
  }
  if (lease->expired.load(std::memory_order_acquire)) return LeaseState::Expired;
  return lease->ended.load(std::memory_order_acquire) ? LeaseState::Ended : LeaseState::Open;
}

void Tracker::answer_authority_reclaim(uint32_t request) noexcept {
  // The authority's lease expired, or was ended (`lease end`, or its command's exit): the
  // process's leases end the same way. An expired one says so to the C++ API (its memory is
  // already given back: a handle dropped after does nothing).
  const EndedBy ended_by = (request & authority::kControlReasonMask) == static_cast<uint32_t>(EndedBy::Expiry)
                               ? EndedBy::Expiry
                               : EndedBy::End;
  journal::AuthorityReclaimPayload answer{};
  answer.request = request;
  GivenBack given;
  for (Lease *lease : leases_.open_leases()) {
    if (!LeaseRegistry::try_end(*lease)) continue;
    if (ended_by == EndedBy::Expiry) lease->expired.store(true, std::memory_order_release);
    end_lease(*lease, ended_by, /*reclaim_anyway=*/true, &given);
    ++answer.leases;
  }
  answer.freed_bytes = given.device_bytes;
  answer.freed_allocations = given.allocations;
  answer.failed_allocations = given.refused;
  answer.time_ns = monotonic_ns();
  // The daemon waits for this record; written even if nothing else was (a lease that owned nothing).
  if (ensure_journal()) journal_.append(journal::RecordType::AuthorityReclaim, &answer, sizeof answer);
  log_info(
      "lease %s of the lease authority ended: %u lease(s) of this process ended, %llu byte(s) of device "
      "memory given back",
      options_.authority_lease.c_str(), answer.leases, static_cast<unsigned long long>(answer.freed_bytes));
}

void Tracker::on_expired(Lease &lease) noexcept {
  // The process is exiting: its classification at exit has the program whole, and a lease
  // that reaches its time-to-live meanwhile ends with the exit (finish_process), classified
  // by it, instead of being classified again while exit handlers take the program apart.
  if (exiting_.load(std::memory_order_acquire)) return;
  if (!LeaseRegistry::try_end(lease)) return;
  lease.expired.store(true, std::memory_order_release);
  end_lease(lease, EndedBy::Expiry);
}

void Tracker::note_device(int32_t device, const unsigned char (&uuid)[16]) noexcept {
  if (device < 0 || device >= 64) return;
  const uint64_t bit = uint64_t{1} << static_cast<unsigned>(device);
  if ((devices_noted_.fetch_or(bit, std::memory_order_relaxed) & bit) != 0) return;  // another thread did
  if (!ensure_journal()) return;
  journal::DevicePayload record{};
  record.device = device;
  std::memcpy(record.uuid, uuid, sizeof record.uuid);
  journal_.append(journal::RecordType::Device, &record, sizeof record);
}

void Tracker::note_signal_from_signal_handler(int signal_number, bool default_action) noexcept {
  if (journal_state_.load(std::memory_order_acquire) != 1) return;  // nothing recorded yet
  journal::SignalPayload record{};
  record.time_ns = monotonic_ns();
  record.signal = static_cast<uint8_t>(signal_number);
  record.default_action = default_action ? 1 : 0;
  journal_.append_from_signal_handler(journal::RecordType::Signal, &record, sizeof record);
}

std::vector<Tracker::LiveMemory> Tracker::live_memory(uint32_t lease_id) noexcept {
  std::vector<LiveMemory> live;
  try {
    std::vector<LiveRecord> records;
    table_.for_each([&](const LiveRecord &record) {
      if (!record.reported && (lease_id == 0 || record.lease_id == lease_id)) records.push_back(record);
    });
    live.reserve(records.size());
    for (const LiveRecord &record : records) {
      const HandleRecord full = records_.full(record);
      live.push_back(LiveMemory{full.id, full.address, full.bytes, full.context, full.api, full.kind});
    }
  } catch (...) {
    log_warning("no memory to classify live allocations: they are reported unchecked");
    live.clear();
  }
  return live;
}

void Tracker::write_reachability(const std::vector<std::pair<uint64_t, uint8_t>> &classes, uint32_t flags) noexcept {
  if (t_lease_classes != nullptr) {  // a lease's classification, for end_lease's counts
    try {
      for (const auto &[id, value] : classes) (*t_lease_classes)[id] = value;
    } catch (...) {
      t_lease_classes->clear();  // out of memory: counted as before, every allocation leaked
    }
  }
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  const journal::RecordType type = t_check != nullptr ? journal::RecordType::Check : journal::RecordType::Reachability;
  if (t_check != nullptr) t_check->entries += classes.size();
  try {
    const uint64_t now = monotonic_ns();
    size_t done = 0;
    do {
      const size_t count = std::min(classes.size() - done, journal::kReachabilityEntriesPerRecord);
      std::vector<char> payload(sizeof(journal::ReachabilityPayload) + count * 8);
      journal::ReachabilityPayload head{now, static_cast<uint32_t>(count), flags};
      std::memcpy(payload.data(), &head, sizeof head);
      for (size_t i = 0; i < count; ++i) {
        const auto &[id, value] = classes[done + i];
        const uint64_t entry = id | uint64_t{value} << journal::kReachabilityClassShift;
        std::memcpy(payload.data() + sizeof head + i * 8, &entry, 8);
      }
      journal_.append(type, payload.data(), payload.size());
      done += count;
    } while (done < classes.size());
  } catch (...) {
    log_warning("no memory to journal the reachability of live allocations: they are reported unchecked");
  }
}

int Tracker::check_now() noexcept {
  auto classifier = lease_classifier_.load(std::memory_order_acquire);
  if (classifier == nullptr || options_.reachability == ReachabilityMode::Off ||
      exiting_.load(std::memory_order_acquire) || journal_state_.load(std::memory_order_acquire) != 1 ||
      t_check != nullptr)
    return -1;
  // A free after the check of what was live at it is journaled as a record of its own, not in
  // its allocation's record (which the reader takes as freed before anything after it): the
  // check then finds it live, as it was.
  raise_barrier();
  CheckInProgress check;
  t_check = &check;
  classifier(*this, 0, false);
  t_check = nullptr;
  // Nothing live, or nothing classified: the check is journaled all the same, empty (all
  // allocations in none are unchecked, as for any classification).
  if (check.entries == 0) {
    t_check = &check;
    write_reachability({}, 0);
    t_check = nullptr;
  }
  return 0;
}

void Tracker::finish_process(uint32_t drivers) noexcept {
  if (!in_own_process() || finished_) return;
  finished_ = true;
  begin_exit();
  control_.stop();  // a request being served is finished first
  leases_.stop_watchdog();
  journal_.stop_prefaulting();  // joined: no thread of ours outlives recording
  for (Lease *lease : leases_.open_leases())
    if (LeaseRegistry::try_end(*lease)) end_lease(*lease, EndedBy::Exit);
  // A process that loaded a driver and recorded nothing still leaves a journal: its report
  // then says "no allocation" instead of taking it for a process that never used a GPU.
  if ((drivers & ~journal::kDriversKnown) != 0) ensure_journal();
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  on_thread_exit();
  journal::ProcessEndPayload end{};
  end.time_ns = monotonic_ns();
  end.dropped_records = journal_.dropped();
  end.drivers = drivers;
  journal_.append(journal::RecordType::ProcessEnd, &end, sizeof end);
}

}  // namespace leaseguard
