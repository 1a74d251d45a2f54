// What every hook needs to know: whether to record, and the thread's re-entry depth.
#pragma once

#include "heap_tracker.h"
#include "stack_jump.h"
#include "tracker.h"

namespace leaseguard::interpose {

// Set once by the constructor: LEASEGUARD_DISABLE=1, or a setuid/setgid program.
extern bool g_pass_through;

// The tracker to record into, or nullptr for pure forwarding.
inline Tracker *recording_tracker() noexcept { return g_pass_through ? nullptr : Tracker::instance(); }

// A hook called from inside another hook (a driver that calls its own exported entry points,
// or another interposer between us and the driver) forwards without recording, so one
// allocation is recorded once.
class ReentryGuard {
 public:
  ReentryGuard() noexcept : outermost_(t_depth++ == 0) {
    if (outermost_) t_outermost_frame = stack_pointer();
  }
  ~ReentryGuard() { --t_depth; }
  ReentryGuard(const ReentryGuard &) = delete;
  ReentryGuard &operator=(const ReentryGuard &) = delete;
  bool outermost() const noexcept { return outermost_; }
  static bool inside() noexcept { return t_depth != 0; }

  // A jump out of a signal handler that leaves the outermost hook in progress on this thread
  // (stack_jump.h) ends it, and every hook nested in it, which lie deeper still.
  static void jumping_to(const StackJump &jump) noexcept {
    if (t_depth != 0 && jump.leaves(t_outermost_frame)) t_depth = 0;
  }

 private:
  static thread_local int t_depth __attribute__((tls_model("initial-exec")));
  static thread_local uintptr_t t_outermost_frame __attribute__((tls_model("initial-exec")));
  bool outermost_;
};

// True where this thread is inside one of leaseguard's hooks or tracked heap calls. exit()
// called now comes from a signal handler that interrupted it (`signal(SIGINT, handler)`
// whose handler calls exit() is common): the frames below may hold the core's locks or a
// heap table shard's, and exit work that takes them would wait forever on its own thread.
inline bool inside_leaseguard() noexcept { return ReentryGuard::inside() || heap::in_tracked_call(); }

// The tracker for this call if it should be recorded (outermost hook, recording on).
inline Tracker *tracker_for(const ReentryGuard &guard) noexcept {
  return guard.outermost() ? recording_tracker() : nullptr;
}

}  // namespace leaseguard::interpose
