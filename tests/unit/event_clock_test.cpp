// The event clock is the monotonic clock as of its last tick: never later than
// CLOCK_MONOTONIC, at most a tick behind it, and never going backwards; the coarse clock
// unless reading it is a system call.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "event_clock.h"

namespace leaseguard {
namespace {

void expect_within_a_tick_and_monotonic() {
  const uint64_t tick = event_clock_resolution_ns();
  ASSERT_GT(tick, 0u);
  // The kernel moves the coarse clock at its tick, which a virtual machine's timer may
  // deliver late: the bound on lagging is generous, the bound on leading exact.
  const uint64_t lag_allowed = tick + 50'000'000;
  uint64_t previous = 0;
  const uint64_t until = monotonic_ns() + 3 * tick;  // across a few ticks
  for (uint64_t round = 0; monotonic_ns() < until; ++round) {
    const uint64_t before = monotonic_ns();
    const uint64_t event = event_clock_ns();
    const uint64_t after = monotonic_ns();
    ASSERT_GE(event, previous) << "round " << round;
    ASSERT_LE(event, after) << "round " << round;
    ASSERT_GE(event + lag_allowed, before) << "round " << round;
    previous = event;
  }
}

TEST(EventClock, IsTheMonotonicClockAsOfItsLastTick) { expect_within_a_tick_and_monotonic(); }

TEST(EventClock, OnSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back(expect_within_a_tick_and_monotonic);
  for (std::thread &thread : threads) thread.join();
}

TEST(EventClock, TheCoarseClockIsKeptUnlessReadingItIsASystemCall) {
  EXPECT_TRUE(coarse_clock_is_cheap_enough(7.8, 35.9));  // a virtual machine's vDSO
  EXPECT_TRUE(coarse_clock_is_cheap_enough(55, 12));     // slow, but no system call
  EXPECT_FALSE(coarse_clock_is_cheap_enough(1500, 40));  // gVisor: only the fine one in its vDSO
  EXPECT_FALSE(coarse_clock_is_cheap_enough(150, 33));   // a system call on this virtual machine
  EXPECT_TRUE(coarse_clock_is_cheap_enough(600, 550));   // no vDSO: both are system calls
}

TEST(EventClock, ChoosingTwiceKeepsTheFirstChoice) {
  choose_event_clock();
  const uint32_t tick = event_clock_resolution_ns();
  choose_event_clock();
  EXPECT_EQ(event_clock_resolution_ns(), tick);
  expect_within_a_tick_and_monotonic();
}

TEST(EventClock, ItsResolutionIsATickOfAtMostASecond) {
  const uint32_t tick = event_clock_resolution_ns();
  EXPECT_GT(tick, 0u);
  EXPECT_LT(tick, 1'000'000'000u);
}

}  // namespace
}  // namespace leaseguard
