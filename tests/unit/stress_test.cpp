// Many threads allocating, freeing across threads and entering, ending and expiring leases
// at once. Afterwards the journal must account for every allocation exactly: each one is
// freed, or reported as leaked once (a leak later freed counts as a late free).
// Run under ThreadSanitizer by the tsan preset.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "journal_replay.h"
#include "test_support.h"
#include "tracker.h"

namespace leaseguard {
namespace {

TEST(Stress, EveryAllocationIsAccountedForExactly) {
  testing::TempDir dir;
  Options options;
  options.out_dir = dir.path();
  options.run_id = "stress";
  options.stack_depth = 8;
  options.log_level = LogLevel::Quiet;
  Tracker tracker(options);

  constexpr int kThreads = 4;
  constexpr int kOperations = 6000;
  std::atomic<uint64_t> allocated{0}, freed{0};
  // Allocations handed to another thread to free.
  std::mutex handoff_mutex;
  std::vector<uint64_t> handoff;
  std::atomic<bool> stop{false};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<uint64_t>(t) * 7919 + 1);
      std::vector<uint64_t> live;
      uint64_t next_address = (static_cast<uint64_t>(t) + 1) << 40;
      for (int i = 0; i < kOperations; ++i) {
        uint64_t lease = 0;
        if (random() % 50 == 0) {
          lease = tracker.lease_begin("scope", random() % 3 == 0 ? 1 : 0, Policy::Report);
          tracker.lease_enter(lease);
        }
        uint64_t choice = random() % 10;
        if (choice < 5 || live.empty()) {
          AllocationEvent event;
          event.api = Api::cuMemAlloc_v2;
          event.address = next_address;
          event.bytes = 1 + random() % (1 << 20);
          event.context = 1;
          next_address += 256 * (1 + random() % 16);
          tracker.on_alloc(event);
          allocated.fetch_add(1);
          live.push_back(event.address);
        } else if (choice < 8) {
          size_t index = random() % live.size();
          if (tracker.on_free(Api::cuMemFree_v2, live[index]) == FreeOutcome::Known) freed.fetch_add(1);
          live[index] = live.back();
          live.pop_back();
        } else {
          std::lock_guard lock(handoff_mutex);
          handoff.push_back(live.back());
          live.pop_back();
          if (handoff.size() > 8) {  // free someone else's
            uint64_t address = handoff.front();
            handoff.erase(handoff.begin());
            if (tracker.on_free(Api::cuMemFree_v2, address) == FreeOutcome::Known) freed.fetch_add(1);
          }
        }
        if (lease != 0) {
          tracker.lease_leave();
          if (random() % 2 == 0) tracker.lease_end(lease);  // others expire or end at exit
        }
      }
    });
  }
  // Meanwhile leases begin and end from a thread that allocates nothing.
  std::thread churn([&] {
    while (!stop.load()) {
      uint64_t lease = tracker.lease_begin("churn", 0, Policy::Report);
      tracker.lease_end(lease);
    }
  });
  for (auto &thread : threads) thread.join();
  stop.store(true);
  churn.join();
  tracker.finish_process();

  report::ProcessReport process;
  std::string error;
  ASSERT_TRUE(report::load_journal(tracker.journal_path(), process, error)) << error;
  EXPECT_FALSE(process.read_stats.damaged());
  EXPECT_EQ(process.allocations, allocated.load());
  EXPECT_EQ(process.unknown_frees, 0u);
  const uint64_t journal_frees = process.frees - process.unknown_frees;
  EXPECT_EQ(journal_frees, freed.load());
  // allocated = freed + leaked + reclaimed (nothing is reclaimed yet); a late free is both
  // a free and a leak reported earlier, so it is counted once.
  EXPECT_EQ(process.allocations, journal_frees - process.late_frees + process.leaked_allocations());
  EXPECT_EQ(tracker.live_allocations(), allocated.load() - freed.load());
}

}  // namespace
}  // namespace leaseguard

namespace leaseguard {
namespace {

// A lease ended while other threads allocate into it: each allocation is counted once,
// either by the lease's end (it completed before) or by the process lease (after).
TEST(Stress, EndingALeaseWhileThreadsAllocateIntoIt) {
  for (int round = 0; round < 20; ++round) {
    testing::TempDir dir;
    Options options;
    options.out_dir = dir.path();
    options.run_id = "end-race";
    options.stack_depth = 0;
    options.log_level = LogLevel::Quiet;
    Tracker tracker(options);
    uint64_t lease = tracker.lease_begin("contended", 0, Policy::Report);
    std::atomic<int> ready{0};
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> made{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        tracker.lease_enter(lease);
        ready.fetch_add(1);
        uint64_t address = (static_cast<uint64_t>(t) + 1) << 36;
        while (!stop.load()) {
          AllocationEvent event;
          event.api = Api::cuMemAlloc_v2;
          event.address = address += 256;
          event.bytes = 1;
          tracker.on_alloc(event);
          made.fetch_add(1);
        }
        tracker.lease_leave();
      });
    while (ready.load() < 3) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int counted_by_end = tracker.lease_end(lease);
    stop.store(true);
    for (auto &thread : threads) thread.join();
    tracker.finish_process();

    report::ProcessReport process;
    std::string error;
    ASSERT_TRUE(report::load_journal(tracker.journal_path(), process, error)) << error;
    uint64_t in_lease = 0, in_process = 0;
    for (const auto &ending : process.leases) {
      if (ending.name == "contended") in_lease += ending.leaks.size();
      if (ending.name == "process") in_process += ending.leaks.size();
    }
    EXPECT_EQ(in_lease, static_cast<uint64_t>(counted_by_end));  // the journal agrees with the return value
    EXPECT_EQ(in_lease + in_process, made.load());               // and nothing is counted twice or lost
  }
}

}  // namespace
}  // namespace leaseguard
