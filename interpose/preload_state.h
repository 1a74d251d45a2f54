// What every hook needs to know: whether to record, and the thread's re-entry depth.
#pragma once

#include "tracker.h"

namespace leaseguard::interpose {

// Set once by the constructor: LEASEGUARD_DISABLE=1, or a setuid/setgid program.
extern bool g_pass_through;

// The tracker to record into, or nullptr for pure forwarding.
inline Tracker *recording_tracker() noexcept { return g_pass_through ? nullptr : Tracker::instance(); }

// A hook called from inside another hook (a driver that calls its own exported entry
// points, or another interposer between us and the driver) forwards without recording,
// so one allocation is recorded once.
class ReentryGuard {
 public:
  ReentryGuard() noexcept : outermost_(t_depth++ == 0) {}
  ~ReentryGuard() { --t_depth; }
  ReentryGuard(const ReentryGuard &) = delete;
  ReentryGuard &operator=(const ReentryGuard &) = delete;
  bool outermost() const noexcept { return outermost_; }

 private:
  static thread_local int t_depth __attribute__((tls_model("initial-exec")));
  bool outermost_;
};

// The tracker for this call if it should be recorded (outermost hook, recording on).
inline Tracker *tracker_for(const ReentryGuard &guard) noexcept {
  return guard.outermost() ? recording_tracker() : nullptr;
}

}  // namespace leaseguard::interpose
