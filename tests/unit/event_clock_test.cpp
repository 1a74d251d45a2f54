// The event clock agrees with CLOCK_MONOTONIC and never goes backwards on a thread.
#include <gtest/gtest.h>
#include <time.h>

#include <thread>
#include <vector>

#include "event_clock.h"

namespace leaseguard {
namespace {

void expect_close_and_monotonic() {
  constexpr uint64_t kSlackNs = 1'000'000;  // the interpolation window; the error is far smaller
  uint64_t previous = 0;
  const uint64_t until = monotonic_ns() + 30'000'000;  // several windows, so the rate is learned
  for (uint64_t round = 0; monotonic_ns() < until; ++round) {
    uint64_t before = monotonic_ns();
    uint64_t event = event_clock_ns();
    uint64_t after = monotonic_ns();
    ASSERT_GE(event, previous) << "round " << round;
    ASSERT_GE(event + kSlackNs, before) << "round " << round;
    ASSERT_LE(event, after + kSlackNs) << "round " << round;
    previous = event;
  }
}

TEST(EventClock, AgreesWithTheMonotonicClockAndNeverGoesBack) { expect_close_and_monotonic(); }

// A program that allocates in a tight loop from its start asks far more often than once an
// interpolation window: the rate must still be learned within a few windows, or every time
// stamp costs a clock_gettime.
TEST(EventClock, LearnsTheCounterRateWhenAskedWithoutPause) {
  if (!detail::time_stamp_counter_usable()) GTEST_SKIP() << "no invariant time stamp counter";
  detail::g_ns_per_tick.store(0);
  detail::t_clock_anchor = detail::ClockAnchor{};
  // A tight loop learns the rate within a window or two. The bound is far longer: a thread
  // descheduled past a short one (a loaded machine, ThreadSanitizer) would end the loop
  // before it asked again, and fail without a fault.
  const uint64_t until = monotonic_ns() + 1000 * detail::kInterpolationWindowNs;
  while (monotonic_ns() < until && detail::g_ns_per_tick.load() == 0) event_clock_ns();
  EXPECT_NE(detail::g_ns_per_tick.load(), 0u);
  expect_close_and_monotonic();
}

TEST(EventClock, OnSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back(expect_close_and_monotonic);
  for (std::thread &thread : threads) thread.join();
}

}  // namespace
}  // namespace leaseguard
