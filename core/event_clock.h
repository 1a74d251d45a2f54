// The time stamps of allocation and free records: CLOCK_MONOTONIC nanoseconds, read for a
// fraction of clock_gettime's cost.
//
// Why: two time stamps per allocation + free pair at ~27 ns each (clock_gettime through the
// vDSO on kvm-clock) were a fifth of what recording a pair cost. Each thread anchors the
// time stamp counter to clock_gettime and interpolates from its anchor for up to a
// millisecond, with a counter frequency learned from the anchors themselves; past that, or
// without an invariant time stamp counter, it asks clock_gettime. Interpolated times are
// within a few microseconds of the clock (a millisecond at the learned frequency's error)
// and never go backwards on one thread.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace leaseguard {

namespace detail {
#if defined(__x86_64__)
// One thread's anchor: where its counter and the clock last agreed.
struct ClockAnchor {
  uint64_t tsc;
  uint64_t ns;
  uint64_t last;  // the last time stamp this thread was given
  bool valid;
};
// __thread, not thread_local: a plain variable with no initialization guard, so the inline
// read below is one %fs-relative access (initial-exec). The core's few such variables fit
// the static TLS reserve even when the C++ API library that carries this core is loaded
// with dlopen.
extern __thread ClockAnchor t_clock_anchor __attribute__((tls_model("initial-exec")));
// Nanoseconds per counter tick, in 32.32 fixed point; 0 until a thread has measured it.
extern std::atomic<uint64_t> g_ns_per_tick;
inline constexpr uint64_t kInterpolationWindowNs = 1'000'000;  // at most this far from an anchor
#endif
// Everything but the interpolation: a new anchor, the rate, clock_gettime.
uint64_t event_clock_slow_ns() noexcept;
// Whether this machine's time stamp counter is used at all (an invariant one).
bool time_stamp_counter_usable() noexcept;
}  // namespace detail

// Inline: every allocation and every free asks.
inline uint64_t event_clock_ns() noexcept {
#if defined(__x86_64__)
  // An anchor is only ever made where the counter is usable: no counter read before that
  // (a sandbox may forbid it).
  detail::ClockAnchor &anchor = detail::t_clock_anchor;
  if (anchor.valid) {
    const uint64_t ticks = __rdtsc() - anchor.tsc;  // huge if the counter went back (another core)
    const uint64_t ns_per_tick = detail::g_ns_per_tick.load(std::memory_order_relaxed);
    const uint64_t elapsed = ticks * ns_per_tick >> 32;
    if (ticks < (uint64_t{1} << 32) && ns_per_tick != 0 && elapsed < detail::kInterpolationWindowNs) {
      const uint64_t now = anchor.ns + elapsed;
      anchor.last = now > anchor.last ? now : anchor.last;
      return anchor.last;
    }
  }
#endif
  return detail::event_clock_slow_ns();
}

// CLOCK_MONOTONIC itself, for what is rare or must be exact (leases, deadlines, headers).
uint64_t monotonic_ns() noexcept;

}  // namespace leaseguard
