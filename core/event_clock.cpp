// Implementation of the event clock (see event_clock.h for why it exists).
#include "event_clock.h"

#include <time.h>

#include <atomic>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace leaseguard {
namespace {

#if defined(__x86_64__)
bool invariant_tsc() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 8)) != 0;
}

const bool g_tsc_usable = invariant_tsc();
#endif

}  // namespace

#if defined(__x86_64__)
namespace detail {
__thread ClockAnchor t_clock_anchor __attribute__((tls_model("initial-exec")));
std::atomic<uint64_t> g_ns_per_tick{0};
}  // namespace detail
#endif

uint64_t monotonic_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

bool detail::time_stamp_counter_usable() noexcept {
#if defined(__x86_64__)
  return g_tsc_usable;
#else
  return false;
#endif
}

uint64_t detail::event_clock_slow_ns() noexcept {
#if defined(__x86_64__)
  if (!g_tsc_usable) return monotonic_ns();
  ClockAnchor &anchor = t_clock_anchor;
  const uint64_t tsc = __rdtsc();
  const uint64_t now = monotonic_ns();
  const bool counter_went_back = anchor.valid && tsc <= anchor.tsc;  // another core's counter
  const bool window_passed = anchor.valid && now - anchor.ns >= kInterpolationWindowNs;
  if (window_passed && !counter_went_back && now - anchor.ns < 1'000'000'000ull) {
    // A measurement of the counter's rate over at least a window: the first one stands, later
    // ones are averaged in, so one preempted measurement moves the rate by an eighth at most.
    const uint64_t measured = ((now - anchor.ns) << 32) / (tsc - anchor.tsc);
    const uint64_t known = g_ns_per_tick.load(std::memory_order_relaxed);
    g_ns_per_tick.store(known == 0 ? measured : known - known / 8 + measured / 8, std::memory_order_relaxed);
  }
  // While the rate is still unknown, the anchor stays until a window has passed, so that the
  // rate can be measured: a thread asking far more often than once a window would otherwise
  // move its anchor at every call and never learn it, paying for clock_gettime every time.
  if (!anchor.valid || counter_went_back || window_passed) {
    anchor.tsc = tsc;
    anchor.ns = now;
    anchor.valid = true;
  }
  anchor.last = now > anchor.last ? now : anchor.last;
  return anchor.last;
#else
  return monotonic_ns();
#endif
}

}  // namespace leaseguard
