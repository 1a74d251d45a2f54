// The per-process core: records allocations and frees, attributes them to leases, captures
// and interns stacks, and writes the journal.
//
// This is the narrow interface between interpose/ (and the C ABI) and the core. Callers tell
// it what happened; it never calls a driver. All entry points are noexcept: a failure inside
// leaseguard degrades to "not recorded" with one warning, never to a changed host program.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_ids.h"
#include "allocation_records.h"
#include "control_channel.h"
#include "event_clock.h"
#include "handle_table.h"
#include "journal_writer.h"
#include "leases.h"
#include "options.h"
#include "instance_slot.h"
#include "resource_rules.h"
#include "reclaim_backend.h"
#include "stack_capture.h"
#include "stack_table.h"

namespace leaseguard {

struct AllocationEvent {
  Api api = Api::Unknown;
  Kind kind = Kind::Device;
  uint64_t address = 0;
  uint64_t bytes = 0;
  int32_t device = 0;
  uint64_t context = 0;
  uint64_t lease_id = 0;  // 0: the calling thread's current lease
  WalkStart caller;       // where the application's stack begins, if the hook knows
};

// Where a lease stands (lease_state).
enum class LeaseState { Unknown = -1, Open = 0, Ended = 1, Expired = 2 };

// Where a context destroy began, taken before the driver is asked (Tracker::
// before_context_destroy): what was recorded before it went with the context; what is
// recorded after it may be a new context's that was given the destroyed one's handle.
struct ContextDestroyMark {
  uint32_t barrier = 0;  // the tracker's barrier count from the mark on
  uint64_t slot = 1;     // the journal slot from the mark on (slot 0 is the header)
};

// What a free hook must do with the program's free.
enum class FreeOutcome {
  Known,     // a live allocation: forward to the driver
  Unknown,   // not a live allocation leaseguard knows: forward untouched, the driver decides
  Reclaimed  // leaseguard already gave it back when its lease ended: do NOT forward; succeed
};

struct LastStack;  // a thread's last stack walked (last_stack.h)

class Tracker {
 public:
  explicit Tracker(Options options);
  Tracker(const Tracker &) = delete;
  Tracker &operator=(const Tracker &) = delete;
  ~Tracker();

  // The process-wide instance, or nullptr if none was installed (disabled, or not yet). In
  // a process made by a raw clone() of one that had an instance, first gives it its own
  // (instance_slot.h): every hooked call asks here.
  static Tracker *instance() noexcept {
    auto *tracker = static_cast<Tracker *>(InstanceSlot::load());
    return __builtin_expect(tracker != nullptr, true) ? tracker : instance_in_new_process();
  }
  // Creates the process-wide instance once; later calls return the existing one.
  static Tracker *install(const Options &options);
  // In a forked child: forgets the parent's instance (without touching its locks, which
  // another parent thread may have held at the fork) and installs a fresh one. The parent's
  // journal descriptor is closed if `close_descriptor` (a fork() child's descriptors are its
  // own; a raw clone()'s may be its parent's).
  // After fork() (whose handlers ran: `close_descriptor`), the child goes on with the
  // leases its parent had open, each its own copy, begun again in the child's journal: a
  // session or scope the child inherited owns what the child allocates in it.
  static void reinstall_after_fork(bool close_descriptor = true) noexcept;
  // fork()'s prepare and parent handlers: the lease registry held across the fork.
  static void prepare_fork() noexcept;
  static void parent_after_fork() noexcept;

  // Joins leaseguard's threads (the journal's, the lease watchdog) around a system call that
  // fails in a multithreaded process (unshare(CLONE_NEWUSER), setns), and lets them start
  // again after it: the program's system calls behave as without leaseguard.
  void suspend_threads() noexcept;
  void resume_threads() noexcept;
  // Lets time pass for the lease watchdog alone, `ns` ahead of the clock (tests: a
  // time-to-live ends at the moment the test chooses).
  void advance_lease_clock(uint64_t ns) noexcept { leases_.advance_clock(ns); }

  // Called after the driver returned success for an allocation.
  void on_alloc(const AllocationEvent &event) noexcept;
  // Called before the driver frees `value` (an address, or a handle in the namespace of
  // `api`); says whether to forward the free. A free entry point that does not release what
  // the value is (a device-memory free of an IPC mapping) leaves the record live: the driver fails it.
  // `owner_drop`: the C++ API's last handle is letting go (expected after its lease ended).
  FreeOutcome on_free(Api api, uint64_t value, bool owner_drop = false) noexcept;
  // Called before the driver is asked to destroy a context (or to release or reset a
  // primary context, which may destroy it); then, after it did, on_context_destroyed with
  // the mark: the allocations recorded before the mark went with `context`. A mark whose
  // destroy failed or did not happen is dropped.
  ContextDestroyMark before_context_destroy() noexcept;
  void on_context_destroyed(Api api, uint64_t context, int32_t device, const ContextDestroyMark &mark) noexcept;

  // Called after the driver destroyed a memory pool from which `outstanding_bytes` were
  // still allocated (they stay valid until freed, and are reported if they never are).
  void on_pool_destroyed_in_use(uint64_t pool, uint64_t outstanding_bytes) noexcept;

  // The C ABI of include/leaseguard/leaseguard.h.
  // `classify_at_end`: its end is classified whatever the reachability mode (unless off).
  uint64_t lease_begin(const char *name, uint64_t ttl_ms, Policy policy, bool classify_at_end = false) noexcept;
  int lease_end(uint64_t lease_id) noexcept;  // leaked allocations, or -1
  // Whether the calling process is the one this core records for. False in a child that
  // shares its parent's memory without a fork handler having run (vfork, clone(CLONE_VM)):
  // everything the core holds there is its parent's, and an exit() there must touch none of it.
  bool in_own_process() const noexcept { return getpid() == pid_; }

  int lease_enter(uint64_t lease_id) noexcept;
  LeaseState lease_state(uint64_t lease_id) noexcept;
  int lease_leave() noexcept;

  // What a reachability scan classifies: the live allocations (at addresses, and handles)
  // that no ended lease reported yet.
  struct LiveMemory {
    uint64_t id = 0;
    uint64_t address = 0;
    uint64_t bytes = 0;
    uint64_t context = 0;
    Api api = Api::Unknown;
    Kind kind = Kind::Device;
  };
  // `lease_id` 0: every lease's.
  std::vector<LiveMemory> live_memory(uint32_t lease_id = 0) noexcept;
  // Journals a classification: (allocation id, reachability::Class) pairs, and the
  // journal::kReachability* flags that say how far it can be trusted.
  void write_reachability(const std::vector<std::pair<uint64_t, uint8_t>> &classes, uint32_t flags) noexcept;

  // The process has begun to exit (its classification at exit is about to run): from now on
  // a time-to-live no longer ends a lease; the exit does (finish_process).
  void begin_exit() noexcept { exiting_.store(true, std::memory_order_release); }
  // A live check (leaseguard_check): every live allocation classified now, while the program
  // runs, by the lease classifier (call_to_classify_leases), its classes journaled as a check;
  // nothing ends and nothing is reported. 0; -1 where nothing can be classified (reachability
  // off, the process exiting, no journal, a check already running on this thread).
  int check_now() noexcept;

  // At exit: ends every open lease (ended_by exit) and marks the journal complete, saying
  // which drivers were loaded (journal::kDriversKnown with kDriver* bits; 0: not known). A
  // process with a driver loaded gets a journal even if it recorded nothing.
  void finish_process(uint32_t drivers = 0) noexcept;

  // A thread is about to exit: writes what its compact journal state has not yet written
  // (its recycles). Called for the installed tracker by a thread-exit hook; the process's
  // end does the same for the thread that ends it. Threads that exit otherwise leave their
  // last recycles uncounted.
  void on_thread_exit() noexcept {
    if (journal_state_.load(std::memory_order_acquire) != 1) return;
    records_.write_recycled_counts();
    journal_.give_up_run();  // what is left of its run of slots: readers skip it whole
  }

  // From a SIGTERM/SIGINT handler, before the program's handler or the default action:
  // journals the signal's arrival and nothing else (async-signal-safe: one record). Leases
  // go on, so that a program that cleans up in its handler and exits is reported as it
  // ended; one that dies of the signal is reported from its journal, as any killed process.
  void note_signal_from_signal_handler(int signal_number, bool default_action) noexcept;

  // Whether the UUID of device ordinal `device` is journaled already (note_device): the hooks
  // ask the driver for it once per process, before its first allocation on the device.
  // Devices past 63 (and unknown ones) are never noted.
  bool device_noted(int32_t device) const noexcept {
    return device < 0 || device >= 64 ||
           (devices_noted_.load(std::memory_order_relaxed) >> static_cast<unsigned>(device) & 1) != 0;
  }
  // Journals device `device`'s UUID (all zeros: unknown).
  void note_device(int32_t device, const unsigned char (&uuid)[16]) noexcept;

  // Frames in these ranges (the preload, the C++ API library) are dropped from the top of
  // stacks. Called at start-up, before other threads record.
  void exclude_code(CodeRange range) noexcept { excluded_.add(range); }

  // `callback` runs once in each process, when its journal opens (its first record): the
  // front end then arranges its classification at exit (reachability.h). Process-wide.
  static void call_when_journal_opens(void (*callback)()) noexcept {
    journal_opened_callback_.store(callback, std::memory_order_release);
  }

  // `classify(tracker, lease_id)` runs before a lease that ends while the program runs is
  // reported, where the options ask for its classification (reachability.h): the process
  // lease's time-to-live or deadline, and with --reachability=leases every lease. Process-wide.
  // `caller_done`: the lease asked to be classified at its end (Lease::classify_at_end), and
  // the code that ends it holds nothing of the lease's in its frames (a test's lease, ended
  // once the test has returned): that thread's stack is not read, its thread-locals are.
  static void call_to_classify_leases(void (*classify)(Tracker &, uint32_t lease_id, bool caller_done)) noexcept {
    lease_classifier_.store(classify, std::memory_order_release);
  }

  // Who frees allocations for leases with policy reclaim. Without one, reclaim reports only.
  void set_reclaim_backend(ReclaimBackend *backend) noexcept { backend_ = backend; }

  const Options &options() const noexcept { return options_; }
  size_t live_allocations() const { return table_.size(); }
  // The memory the live records take: the table's (free slots included) and the side store's.
  size_t live_record_bytes() const { return table_.memory_bytes() + records_.side_store_bytes(); }
  const std::string &journal_path() const noexcept { return journal_.path(); }

 private:
  // True once the journal is open; opens it on first use. Inline: every allocation asks.
  bool ensure_journal() noexcept {
    const int state = journal_state_.load(std::memory_order_acquire);
    return state != 0 ? state == 1 : open_journal_once();
  }
  bool open_journal_once() noexcept;
  bool open_journal(std::string &error);
  bool open_journal_in(int directory, const std::string &directory_path, std::string &error);
  Lease &current_lease() noexcept;
  // What a reclaim gave back to the driver: allocations and the bytes of device memory
  // among them (resource_rules.h), and those the driver refused to free.
  struct GivenBack {
    uint64_t allocations = 0;
    uint64_t device_bytes = 0;
    uint64_t refused = 0;
  };
  // Ends `lease`, which try_end chose this caller for: classifies, reports and, with policy
  // reclaim or `reclaim_anyway` (the node lease authority's teardown), gives its leaks back
  // (not at exit). Returns its leaks; adds what was given back to `given_back` if not null.
  size_t end_lease(Lease &lease, EndedBy ended_by, bool reclaim_anyway = false,
                   GivenBack *given_back = nullptr) noexcept;
  // On the control thread, when the node lease authority's teardown asks for it (`request`:
  // authority::kControlReclaim | the EndedBy of its lease's end): every open lease ends, its
  // leaks given back whatever its policy, and one AuthorityReclaim record says it is done.
  void answer_authority_reclaim(uint32_t request) noexcept;
  // Reclaiming a lease's leaks: taken out of the table (registered as reclaimed, so that the
  // program's late free of one is kept from the driver), then given back through the
  // backend, newest first; one the driver refuses stays live, a reported leak.
  std::vector<HandleRecord> take_for_reclaim(const Lease &lease) noexcept;
  GivenBack give_back(std::vector<HandleRecord> &records) noexcept;
  void keep_after_failed_reclaim(HandleRecord &record, int status) noexcept;
  using Unjournaled = AllocationRecords::Unjournaled;
  void write_lease_end(const Lease &lease, EndedBy ended_by, size_t leaked, const Unjournaled &unjournaled) noexcept;
  void write_free(uint64_t id, uint64_t address, Api api, uint8_t flags, uint32_t stack_id, int32_t status) noexcept;
  // The rare paths of on_alloc and on_free, out of line so the common ones keep their
  // registers: a value leaseguard reclaimed was handed out again; no journal record to read
  // a live record back from; an address handed out again whose free leaseguard never saw;
  // a free that needs a record of its own; a late or unexpected free, with its stack.
  __attribute__((noinline)) void note_value_given_again(Api api, uint64_t value) noexcept;
  __attribute__((noinline)) void write_implicit_free(const LiveRecord &displaced) noexcept;
  __attribute__((noinline)) void write_free_record_of(const LiveRecord &record, Api api) noexcept;
  // `mismatched`: with kFreeMismatched, the entry point of the live allocation `api` does not free.
  __attribute__((noinline)) void write_unexpected_free(const LiveRecord *late, uint64_t value, Api api,
                                                       int unknown_flags, Api mismatched) noexcept;
  // True if `value` was reclaimed when its lease ended and this is the program's late free
  // of it: then it is journaled as such and must not reach the driver. Inline: every free
  // asks, and almost always nothing was reclaimed.
  bool swallow_late_free(Api api, uint64_t value, bool owner_drop, bool journaling) noexcept {
    return reclaimed_count_.load(std::memory_order_acquire) != 0 && take_late_free(api, value, owner_drop, journaling);
  }
  bool take_late_free(Api api, uint64_t value, bool owner_drop, bool journaling) noexcept;
  // A barrier: something the replay must see in its place happened (a lease ended, a context
  // or a pool was destroyed), so frees of allocations journaled before it can no longer be
  // stored in their records (allocation_records.h) and get records of their own. Returns the
  // number of barriers raised so far, this one included.
  uint32_t raise_barrier() noexcept { return barriers_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  void on_expired(Lease &lease) noexcept;
  void write_lease_begin(const Lease &lease) noexcept;
  // The calling stack's id in the stack table, or 0 with stacks off.
  uint32_t capture_and_intern(const WalkStart &start = {}) noexcept {
    return options_.stack_depth > 0 ? capture_and_intern_stack(start) : 0;
  }
  uint32_t capture_and_intern_stack(const WalkStart &start) noexcept;
  // A walk from `start`, its stack interned; kept in `seen` (a thread's last stacks) if not null.
  uint32_t walk_and_intern(const WalkStart &start, LastStack *seen, size_t max_frames, uint64_t code_now) noexcept;
  uint64_t take_allocation_id() noexcept;  // see next_allocation_id_
  // None installed; or, in a process made by a raw clone(), gives it its own instance and
  // journal (instance_slot.h).
  __attribute__((noinline, cold)) static Tracker *instance_in_new_process() noexcept;

  static inline std::atomic<void (*)()> journal_opened_callback_{nullptr};
  static inline std::atomic<void (*)(Tracker &, uint32_t, bool)> lease_classifier_{nullptr};
  std::atomic<bool> exiting_{false};  // begin_exit()

  Options options_;
  uint64_t start_monotonic_ns_;
  uint64_t start_realtime_ns_;
  journal::JournalWriter journal_;
  std::mutex journal_open_mutex_;
  std::atomic<int> journal_state_{0};  // 0: not yet, 1: open, 2: failed
  bool finished_ = false;
  HandleTable table_;
  StackTable stacks_;
  // Allocation ids: each thread takes a block of them at a time (take_allocation_id), so an
  // allocation's id costs no shared atomic operation. Unique, but not consecutive across
  // threads: the report orders allocations by their place in the journal, not by id.
  const uint64_t instance_number_;          // tells this tracker's blocks from another's (tests make several)
  const pid_t pid_ = getpid();              // the process it records for (a forked child makes its own)
  std::atomic<uint64_t> devices_noted_{0};  // device ordinals whose UUID is journaled (note_device)
  std::atomic<uint64_t> next_allocation_id_{1};
  std::atomic<uint32_t> barriers_{0};                                             // raise_barrier()
  AllocationRecords records_{journal_, options_.journal_mode, instance_number_};  // what the table does not keep
  ExcludedCode excluded_;
  ReclaimBackend *backend_ = nullptr;

  // Addresses leaseguard reclaimed whose free by the program has not come yet. If the
  // driver hands such an address out again, the next free of it is still taken as the late
  // free (and swallowed): see docs/leases.md for why this is the safer of the two choices.
  struct Reclaimed {
    uint64_t id;
    uint32_t lease_id;
    bool reissued;
  };
  std::mutex reclaimed_mutex_;
  std::unordered_multimap<HandleKey, Reclaimed, HandleKeyHash> reclaimed_;  // reference 0 in keys
  std::atomic<size_t> reclaimed_count_{0};

  LeaseRegistry leases_;  // its watchdog calls back into the members above
  // The control page and the thread that waits on it (control_channel.h), made when the
  // journal opens: checks asked from outside, and the node lease authority's reclaim. Last: it
  // ends leases too.
  ControlChannel control_;
};

}  // namespace leaseguard
