// The lease registry: ids, ending once, and the expiry watchdog.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "leases.h"
#include "tracker.h"

namespace leaseguard {
namespace {

TEST(Leases, ProcessLeaseAndExplicitLeases) {
  LeaseRegistry registry(monotonic_ns(), 0, Policy::Report, [](Lease &) {});
  EXPECT_EQ(registry.process_lease().id, kProcessLeaseId);
  EXPECT_EQ(registry.process_lease().name, "process");
  Lease &a = registry.begin("a", 0, Policy::Report, monotonic_ns());
  Lease &b = registry.begin("b", 0, Policy::Abort, monotonic_ns());
  EXPECT_EQ(a.id, 2u);
  EXPECT_EQ(b.id, 3u);
  EXPECT_EQ(registry.find(3), &b);
  EXPECT_EQ(registry.find(99), nullptr);
  auto open = registry.open_leases();
  ASSERT_EQ(open.size(), 3u);
  EXPECT_EQ(open[0], &b);  // newest first, process lease last
  EXPECT_EQ(open[2]->id, kProcessLeaseId);
  EXPECT_TRUE(LeaseRegistry::try_end(a));
  EXPECT_FALSE(LeaseRegistry::try_end(a));
  EXPECT_EQ(registry.open_leases().size(), 2u);
}

// The leases a registry's watchdog expired, in order; waits on the events, not for a time:
// a slow machine only makes a test slower.
class Expiries {
 public:
  LeaseRegistry::ExpiryCallback callback() {
    return [this](Lease &lease) {
      std::lock_guard lock(mutex_);
      expired_.push_back(lease.id);
      changed_.notify_all();
    };
  }
  // The first `count` leases expired (all of them so far, if they are more), or what had
  // expired when 30 s passed without enough.
  std::vector<uint32_t> wait_for(size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return expired_.size() >= count; });
    return expired_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint32_t> expired_;
};

TEST(Leases, WatchdogExpiresEachLeaseOnceInDeadlineOrder) {
  Expiries expiries;
  LeaseRegistry registry(monotonic_ns(), 0, Policy::Report, expiries.callback());
  uint64_t now = monotonic_ns();
  registry.begin("late", 60, Policy::Report, now);
  registry.begin("early", 20, Policy::Report, now);
  registry.begin("never", 0, Policy::Report, now);
  EXPECT_EQ(expiries.wait_for(2), (std::vector<uint32_t>{3, 2}));
  // None expires twice: a lease begun now is the next to expire after them (the watchdog
  // goes in deadline order, and "never" has no deadline to reach).
  const uint32_t last = registry.begin("last", 30, Policy::Report, monotonic_ns()).id;
  EXPECT_EQ(expiries.wait_for(3), (std::vector<uint32_t>{3, 2, last}));
}

// The watchdog's clock moved ahead (what tests use instead of waiting for a time-to-live):
// each lease expires once its time has passed on that clock, the later one only then.
TEST(Leases, TheWatchdogExpiresALeaseOnceItsClockIsMovedPastTheDeadline) {
  Expiries expiries;
  LeaseRegistry registry(monotonic_ns(), 0, Policy::Report, expiries.callback());
  constexpr uint64_t kHourMs = 3'600'000;
  const uint32_t hour = registry.begin("hour", kHourMs, Policy::Report, monotonic_ns()).id;
  const uint32_t day = registry.begin("day", 24 * kHourMs, Policy::Report, monotonic_ns()).id;
  registry.advance_clock((kHourMs + 1) * 1'000'000);
  EXPECT_EQ(expiries.wait_for(1), std::vector<uint32_t>{hour});
  registry.advance_clock(24 * kHourMs * 1'000'000);
  EXPECT_EQ(expiries.wait_for(2), (std::vector<uint32_t>{hour, day}));
}

}  // namespace
}  // namespace leaseguard
