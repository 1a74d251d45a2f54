// The core as the preload drives it, checked through the report its journal yields.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "report/report_model.h"
#include "report/symbolizer.h"
#include "test_support.h"
#include "tracker.h"

namespace leaseguard {
namespace {

Options options_for(const testing::TempDir &dir, int stack_depth = 16) {
  Options options;
  options.out_dir = dir.path();
  options.run_id = "unit";
  options.stack_depth = stack_depth;
  options.log_level = LogLevel::Quiet;
  return options;
}

AllocationEvent event(uint64_t address, uint64_t bytes, uint64_t context = 0xC0, Kind kind = Kind::Device) {
  AllocationEvent e;
  e.api = Api::cuMemAlloc_v2;
  e.kind = kind;
  e.address = address;
  e.bytes = bytes;
  e.device = 0;
  e.context = context;
  return e;
}

report::ProcessReport replay(Tracker &tracker) {
  report::ProcessReport process;
  std::string error;
  EXPECT_TRUE(report::load_journal(tracker.journal_path(), process, error)) << error;
  return process;
}

__attribute__((noinline)) void allocate_from_a_named_function(Tracker &tracker) {
  tracker.on_alloc(event(0x9000, 4242));
  asm volatile("");
}

TEST(Tracker, RecordsLeaksWithTheirStacks) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  allocate_from_a_named_function(tracker);
  tracker.on_alloc(event(0xA000, 100));
  EXPECT_TRUE(tracker.on_free(Api::cuMemFree_v2, 0xA000));
  EXPECT_FALSE(tracker.on_free(Api::cuMemFree_v2, 0xA000));  // double free: unknown now
  tracker.finish_process();

  report::ProcessReport process = replay(tracker);
  EXPECT_TRUE(process.complete);
  EXPECT_EQ(process.unknown_frees, 1u);
  ASSERT_EQ(process.leases.size(), 1u);
  const report::LeaseEnding &lease = process.leases[0];
  EXPECT_EQ(lease.ended_by, EndedBy::Exit);
  EXPECT_EQ(lease.name, "process");
  ASSERT_EQ(lease.leaks.size(), 1u);
  EXPECT_EQ(lease.leaks[0].bytes, 4242u);
  EXPECT_EQ(lease.leaks[0].address, 0x9000u);

  report::Report report;
  report.processes.push_back(process);
  report::Symbolizer symbolizer;
  symbolizer.symbolize(report);
  const auto &stack = report.processes[0].stacks.at(lease.leaks[0].stack_id);
  bool found = std::any_of(stack.begin(), stack.end(), [](const report::Frame &frame) {
    return frame.function && frame.function->find("allocate_from_a_named_function") != std::string::npos;
  });
  EXPECT_TRUE(found);
}

TEST(Tracker, StacksOffRecordsNoStack) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  tracker.on_alloc(event(0x1000, 1));
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.at(0).leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].stack_id, 0u);
  EXPECT_TRUE(process.stacks.empty());
}

TEST(Tracker, ExplicitLeasesAttributeAndCount) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  uint64_t lease = tracker.lease_begin("request", 0, Policy::Report);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  tracker.on_alloc(event(0x1000, 10));
  tracker.on_alloc(event(0x2000, 20));
  std::thread([&] { tracker.on_alloc(event(0x3000, 30)); }).join();  // not entered there
  tracker.on_free(Api::cuMemFree_v2, 0x2000);
  ASSERT_EQ(tracker.lease_leave(), 0);
  EXPECT_EQ(tracker.lease_end(lease), 1);
  EXPECT_EQ(tracker.lease_end(lease), -1);
  EXPECT_EQ(tracker.lease_enter(lease), -1);
  EXPECT_EQ(tracker.lease_enter(12345), -1);
  EXPECT_EQ(tracker.lease_leave(), -1);
  tracker.finish_process();

  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].name, "request");
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::End);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 10u);
  EXPECT_EQ(process.leases[1].name, "process");
  ASSERT_EQ(process.leases[1].leaks.size(), 1u);
  EXPECT_EQ(process.leases[1].leaks[0].bytes, 30u);
}

TEST(Tracker, ContextDestroyRemovesItsAllocationsButNotPoolMemory) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  tracker.on_alloc(event(0x1000, 1, 0xAAA));
  tracker.on_alloc(event(0x2000, 2, 0xAAA, Kind::Async));
  tracker.on_alloc(event(0x3000, 3, 0xBBB));
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xAAA, 0);
  EXPECT_EQ(tracker.live_allocations(), 2u);
  EXPECT_FALSE(tracker.on_free(Api::cuMemFree_v2, 0x1000));  // already gone with its context
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::ContextDestroy);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 1u);
  EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);
  EXPECT_EQ(process.leases[1].leaks.size(), 2u);
}

TEST(Tracker, ReusedAddressClosesTheUnseenFree) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  tracker.on_alloc(event(0x1000, 1));
  tracker.on_alloc(event(0x1000, 2));  // the driver handed the address out again
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.at(0).leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 2u);
}

TEST(Tracker, TtlExpiryReportsLiveAllocationsAndLaterFreesAreLate) {
  testing::TempDir dir;
  Options options = options_for(dir);
  options.ttl_ms = 30;
  Tracker tracker(options);
  tracker.on_alloc(event(0x1000, 11));
  // Wait for the expiry to appear in the journal, however long the machine takes.
  bool expired = false;
  for (int i = 0; i < 3000 && !expired; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto &lease : replay(tracker).leases) expired = expired || lease.ended_by == EndedBy::Expiry;
  }
  ASSERT_TRUE(expired);
  EXPECT_EQ(tracker.lease_end(kProcessLeaseId), -1);  // already ended by its expiry
  tracker.on_free(Api::cuMemFree_v2, 0x1000);         // a late free
  tracker.on_alloc(event(0x2000, 22));                 // after expiry: live at exit
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  EXPECT_EQ(process.late_frees, 1u);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::Expiry);
  EXPECT_EQ(process.leases[0].ttl_ms, 30u);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 11u);
  EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);
  ASSERT_EQ(process.leases[1].leaks.size(), 1u);
  EXPECT_EQ(process.leases[1].leaks[0].bytes, 22u);
}

TEST(Tracker, WritesNothingUntilSomethingIsRecorded) {
  testing::TempDir dir;
  {
    Tracker tracker(options_for(dir));
    tracker.on_free(Api::cuMemFree_v2, 0x1234);  // an unknown free alone opens no journal
    tracker.finish_process();
    EXPECT_TRUE(tracker.journal_path().empty());
  }
}

}  // namespace
}  // namespace leaseguard
