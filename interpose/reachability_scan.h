// Taking the snapshot that core/reachability/reachability.h classifies, in the running program: its
// roots, its live host heap blocks (heap_tracker.h) and device allocations (the tracker's),
// with every other thread stopped (world_stop.h); then journaling the classes.
#pragma once

#include <cstdint>

namespace leaseguard {
class Tracker;
}

namespace leaseguard::interpose {

// When a classification runs: at the process's exit (the last one: exit handlers take the
// program apart after it; classification_turn.h), or while the program runs (a lease's end,
// a check).
enum class Classifying : uint8_t { kWhileRunning, kAtExit };

// Classifies every live allocation no lease has reported yet (of `lease_id` only, if not 0)
// and journals the classes. The calling thread's stack is read from `caller_frame` up:
// leaseguard's own frames below it hold copies of the addresses being classified; 0 on a
// thread of leaseguard's own, whose stack and registers are not the program's.
// `caller_done`: of the calling thread, only its thread-local storage is read, not its stack.
void classify_live_memory(Tracker &tracker, uintptr_t caller_frame, Classifying when, uint32_t lease_id = 0,
                          bool caller_done = false) noexcept;

// The tracker's lease classifier (Tracker::call_to_classify_leases): a lease ending while
// the program runs, by its end call or by its time-to-live on leaseguard's watchdog.
// `caller_done`: the calling thread's stack is not read (Tracker::call_to_classify_leases).
void classify_lease(Tracker &tracker, uint32_t lease_id, bool caller_done) noexcept;

// Run when a process's journal opens: arranges classify_live_memory at its exit, before
// every static destructor, those of what it constructs later included (exit_order.h): they
// would free the containers that hold its device memory.
void arrange_classification_at_exit() noexcept;

// The process's classification at its exit, now, once (what that arrangement runs).
void classify_at_process_exit() noexcept;

}  // namespace leaseguard::interpose
