// Leases: spans of time that own device memory.
//
// Lease 1 is the process lease (begins with the process, ends at exit). Explicit leases
// come from the C ABI. A lease with a time-to-live gets a deadline; a watchdog thread,
// created only once some lease has a deadline, calls the expiry callback when one passes.
// Lease objects are never freed while the registry lives, so a thread may hold a pointer
// to a lease that another thread ends: `ended` tells it so.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include <sched.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_ids.h"
#include "background_thread.h"

namespace leaseguard {

struct Lease {
  uint32_t id = 0;
  std::string name;
  uint64_t ttl_ms = 0;
  Policy policy = Policy::Report;
  uint64_t begin_ns = 0;
  uint64_t deadline_ns = 0;  // CLOCK_MONOTONIC; 0: none
  std::atomic<bool> ended{false};
  std::atomic<bool> expired{false};  // ended by its time-to-live or deadline
  // Its ending is done: leaks reported, reclaimed ones given back. Until then its state is
  // not told to other threads (Tracker::lease_state), so "expired" means "already freed".
  std::atomic<bool> settled{false};
  std::atomic<uint32_t> ending_thread{0};  // who is ending it (it may ask its state meanwhile)
  // Its end is classified whatever the reachability mode (Tracker::lease_begin).
  bool classify_at_end = false;
  // Open in the parent when this process forked: the child's to end (LeaseRegistry::inherit),
  // and begun in its journal when that opens.
  bool inherited = false;
};

class LeaseRegistry {
 public:
  using ExpiryCallback = std::function<void(Lease &)>;

  // `process_deadline_ns` (CLOCK_MONOTONIC, 0: none) ends the process lease earlier than its
  // time-to-live would.
  LeaseRegistry(uint64_t process_begin_ns, uint64_t process_ttl_ms, Policy process_policy, ExpiryCallback on_expiry,
                uint64_t process_deadline_ns = 0);
  ~LeaseRegistry();
  LeaseRegistry(const LeaseRegistry &) = delete;
  LeaseRegistry &operator=(const LeaseRegistry &) = delete;

  Lease &process_lease() { return *process_; }
  Lease &begin(std::string name, uint64_t ttl_ms, Policy policy, uint64_t now_ns, bool classify_at_end = false);
  Lease *find(uint32_t id);
  // Leases not yet ended, newest first (explicit leases before the process lease).
  std::vector<Lease *> open_leases();

  // Marks `lease` ended; true only for the one caller that ended it.
  static bool try_end(Lease &lease) { return !lease.ended.exchange(true); }

  // Stops the watchdog for good and joins it (never from the watchdog itself, which is
  // left to finish on its own): at exit, no thread of ours outlives recording.
  void stop_watchdog();
  // Joins the watchdog, and starts it again in resume_watchdog if a lease still has a
  // deadline: around a system call that a multithreaded process may not make
  // (interpose/hooks/namespace_hooks.cpp). A deadline that passes meanwhile fires on resuming.
  void suspend_watchdog();
  void resume_watchdog();

  // Around fork: the forking thread holds the registry's lock across it, so that the child
  // reads the registry it inherits whole (Tracker::reinstall_after_fork).
  // Never blocks without end: a fork from a signal handler that interrupted this thread
  // inside the registry would wait on itself. After a bounded number of tries it goes on
  // unlocked, and the child then inherits no lease (held_for_fork() false).
  void lock_for_fork() {
    held_for_fork_ = false;
    for (int tries = 0; tries < 1000 && !held_for_fork_; ++tries) {
      held_for_fork_ = mutex_.try_lock();
      if (!held_for_fork_) sched_yield();
    }
  }
  void unlock_after_fork() {
    if (held_for_fork_) mutex_.unlock();
    held_for_fork_ = false;
  }
  bool held_for_fork() const { return held_for_fork_; }
  // In a forked child, on the registry it inherited, whose lock the forking thread (the
  // child's only one) has held since the fork: the leases then open other than the process
  // lease, oldest first.
  std::vector<const Lease *> open_at_fork() const;
  // The child's copy of `parent`, a lease open in its parent at the fork: the same id, name,
  // policy, beginning and deadline, so that a session or scope the child inherited goes on
  // owning what the child allocates in it.
  Lease &inherit(const Lease &parent);

  // Runs `check` on the watchdog every `period_ns` from now on (LEASEGUARD_CHECK_EVERY: a live
  // check), each period counted from the end of the last, so a slow check never queues more.
  void check_every(uint64_t period_ns, std::function<void()> check);

  // Moves the watchdog's clock `ns` ahead of CLOCK_MONOTONIC and wakes it: a test lets a
  // time-to-live pass at the moment it chooses, instead of racing a real one.
  void advance_clock(uint64_t ns);

 private:
  uint64_t now_ns() const;
  void arm(Lease &lease);
  void start_watchdog_locked();
  void watch();
  // Called by the watchdog, locked, after a wait woken by nothing: true (and stopped for good)
  // once the program's main thread has ended (BackgroundThread::main_thread_ended).
  bool leave_if_main_ended();

  std::mutex mutex_;
  bool held_for_fork_ = false;  // lock_for_fork took mutex_ (written by the forking thread only)
  std::condition_variable wake_;
  std::unordered_map<uint32_t, std::unique_ptr<Lease>> leases_;
  Lease *process_ = nullptr;
  uint32_t next_id_ = kProcessLeaseId + 1;
  ExpiryCallback on_expiry_;
  bool watchdog_running_ = false;
  bool stopping_ = false;          // the watchdog leaves its loop
  bool stopped_for_good_ = false;  // and is never started again
  uint64_t clock_ahead_ns_ = 0;    // advance_clock's; read under mutex_
  uint64_t check_period_ns_ = 0;   // check_every's; 0: none
  uint64_t next_check_ns_ = 0;
  std::function<void()> check_;
  BackgroundThread watchdog_;  // joined by the destructor; never destroyed in the preload
};

}  // namespace leaseguard
