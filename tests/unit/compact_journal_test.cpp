// A compact journal (LEASEGUARD_JOURNAL=compact): a thread's allocation freed in place is
// written over by its next one, and the report's leaks stay exactly those of a full journal.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "journal_reader.h"
#include "tracker_test_support.h"

namespace leaseguard {
namespace {

Options compact_options_for(const testing::TempDir &dir, int stack_depth = 0) {
  Options options = options_for(dir, stack_depth);
  options.journal_mode = JournalMode::Compact;
  return options;
}

// What the journal holds, record by record.
struct JournalContents : journal::JournalVisitor {
  uint32_t header_version = 0;
  uint32_t header_flags = 0;
  std::vector<uint64_t> allocated;  // addresses of the allocation records, in journal order
  std::vector<journal::RecycledPayload> recycled;
  void on_header(const journal::HeaderPayload &header) override {
    header_version = header.version;
    header_flags = header.flags;
  }
  void on_alloc(const journal::AllocPayload &alloc) override { allocated.push_back(alloc.address); }
  void on_recycled(const journal::RecycledPayload &record) override { recycled.push_back(record); }
};

JournalContents contents_of(Tracker &tracker) {
  JournalContents contents;
  journal::ReadStats stats;
  std::string error;
  EXPECT_TRUE(journal::read_journal(tracker.journal_path(), contents, stats, error)) << error;
  EXPECT_FALSE(stats.damaged());
  return contents;
}

void allocate_and_free(Tracker &tracker, uint64_t address, uint64_t bytes) {
  tracker.on_alloc(event(address, bytes));
  ASSERT_EQ(tracker.on_free(Api::cuMemFree_v2, address), FreeOutcome::Known);
}

TEST(CompactJournal, ALoopThatAllocatesAndFreesKeepsOneRecordAndCountsTheRest) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  for (uint64_t i = 0; i < 10000; ++i) allocate_and_free(tracker, 0x10000 + (i % 7) * 0x1000, 100 + i % 3);
  tracker.finish_process();

  JournalContents contents = contents_of(tracker);
  EXPECT_EQ(contents.header_flags, journal::kHeaderCompact | journal::kHeaderThreadRuns);
  EXPECT_EQ(contents.header_version, journal::kVersion);  // a reader from before compact journals refuses it
  EXPECT_EQ(contents.allocated.size(), 1u);
  uint64_t recycled = 0, recycled_bytes = 0;
  for (const journal::RecycledPayload &record : contents.recycled) {
    recycled += record.allocations;
    recycled_bytes += record.bytes;
  }
  EXPECT_EQ(recycled, 9999u);
  uint64_t expected_bytes = 0;
  for (uint64_t i = 0; i < 9999; ++i) expected_bytes += 100 + i % 3;  // all but the last
  EXPECT_EQ(recycled_bytes, expected_bytes);

  report::ProcessReport process = replay(tracker);
  EXPECT_TRUE(process.compact_journal);
  EXPECT_EQ(process.allocations, 10000u);
  EXPECT_EQ(process.frees, 10000u);
  EXPECT_EQ(process.recycled_allocations, 9999u);
  EXPECT_EQ(process.leaked_allocations(), 0u);
}

TEST(CompactJournal, AFullJournalKeepsEveryRecord) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  for (uint64_t i = 0; i < 100; ++i) allocate_and_free(tracker, 0x10000, 100);
  tracker.finish_process();
  JournalContents contents = contents_of(tracker);
  EXPECT_EQ(contents.header_flags, journal::kHeaderThreadRuns);
  // Version 5: a reader of version 4 refuses it rather than take its frees' places for times.
  EXPECT_EQ(contents.header_version, journal::kVersion);
  EXPECT_EQ(contents.allocated.size(), 100u);
  EXPECT_TRUE(contents.recycled.empty());
  EXPECT_FALSE(replay(tracker).compact_journal);
}

// The replay applies a free in place before the next lease end, context or pool destroy: a
// record written over after one of those would move the allocation to the other side of it.
TEST(CompactJournal, NothingIsWrittenOverAcrossALeaseEndOrAContextDestroy) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  allocate_and_free(tracker, 0x1000, 1);
  tracker.lease_end(tracker.lease_begin("other", 0, Policy::Report));
  allocate_and_free(tracker, 0x2000, 2);
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xDEAD, 0, tracker.before_context_destroy());
  allocate_and_free(tracker, 0x3000, 3);
  allocate_and_free(tracker, 0x4000, 4);  // written over 0x3000
  tracker.finish_process();
  EXPECT_EQ(contents_of(tracker).allocated, (std::vector<uint64_t>{0x1000, 0x2000, 0x4000}));
}

// A destroy that has begun but is not yet recorded has raised its barrier already: an allocation
// made meanwhile (perhaps in a new context given the destroyed one's handle) must not take
// a slot from before the destroy began, or it would go with the destroyed context.
TEST(CompactJournal, AnAllocationAfterADestroyBeganIsNotWrittenOverAnEarlierRecord) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  allocate_and_free(tracker, 0x1000, 1);
  const ContextDestroyMark mark = tracker.before_context_destroy();
  tracker.on_alloc(event(0x2000, 2, 0xC0));  // the handle's new context
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xC0, 0, mark);
  EXPECT_EQ(tracker.live_allocations(), 1u);
  tracker.finish_process();
  EXPECT_EQ(contents_of(tracker).allocated, (std::vector<uint64_t>{0x1000, 0x2000}));
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leaked_allocations(), 1u);
  EXPECT_EQ(process.leases.back().ended_by, EndedBy::Exit);
}

TEST(CompactJournal, ALiveAllocationOrAFreeWithARecordOfItsOwnIsNeverWrittenOver) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  tracker.on_alloc(event(0x1000, 1));  // live
  allocate_and_free(tracker, 0x2000, 2);
  tracker.on_alloc(event(0x3000, 3));  // written over 0x2000
  const uint64_t lease = tracker.lease_begin("job", 0, Policy::Report);
  tracker.lease_end(lease);
  ASSERT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x3000), FreeOutcome::Known);  // after an end: a record
  tracker.on_alloc(event(0x4000, 4));
  tracker.finish_process();
  EXPECT_EQ(contents_of(tracker).allocated, (std::vector<uint64_t>{0x1000, 0x3000, 0x4000}));
}

// Only the journal's last record is written over: one appended after it (here another
// thread's) stays after it, as the replay needs.
TEST(CompactJournal, ARecordAppendedAfterTheLastAllocationKeepsIt) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  allocate_and_free(tracker, 0x1000, 1);
  std::thread([&] { tracker.on_alloc(event(0x2000, 2)); }).join();
  ASSERT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);  // in place, in the other's record
  tracker.on_alloc(event(0x3000, 3));
  tracker.finish_process();
  EXPECT_EQ(contents_of(tracker).allocated, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
}

// An allocation freed on another thread is written over as well: what counts is that its
// free was written in place, not who wrote it.
TEST(CompactJournal, AnAllocationFreedOnAnotherThreadIsWrittenOverToo) {
  testing::TempDir dir;
  Tracker tracker(compact_options_for(dir));
  tracker.on_alloc(event(0x1000, 1));
  std::thread([&] { EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Known); }).join();
  tracker.on_alloc(event(0x2000, 2));
  tracker.finish_process();
  EXPECT_EQ(contents_of(tracker).allocated, (std::vector<uint64_t>{0x2000}));
  EXPECT_EQ(replay(tracker).recycled_allocations, 1u);
}

using LeakKey = std::tuple<uint64_t, uint64_t, uint32_t, EndedBy>;  // address, bytes, lease, ended by

// Leases, context destroys, late frees and leaks at exit, on two threads, in either mode.
std::vector<LeakKey> leaks_of_a_mixed_workload(JournalMode mode, report::ProcessReport &process) {
  testing::TempDir dir;
  Options options = options_for(dir, 8);
  options.journal_mode = mode;
  Tracker tracker(options);
  auto loop = [&](uint64_t base, int pairs) {
    for (int i = 0; i < pairs; ++i) allocate_and_free(tracker, base + static_cast<uint64_t>(i % 5) * 0x100, 64);
  };
  loop(0x100000, 50);
  const uint64_t lease = tracker.lease_begin("job", 0, Policy::Report);
  EXPECT_EQ(tracker.lease_enter(lease), 0);
  tracker.on_alloc(event(0x3000, 3));  // leaks when the lease ends
  loop(0x200000, 50);
  tracker.on_alloc(event(0x4000, 4));  // freed late
  EXPECT_EQ(tracker.lease_leave(), 0);
  std::thread([&] {
    loop(0x300000, 50);
    tracker.on_thread_exit();
  }).join();
  EXPECT_EQ(tracker.lease_end(lease), 2u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x4000), FreeOutcome::Known);
  tracker.on_alloc(event(0x5000, 5, 0xC1));  // goes with its context
  loop(0x400000, 50);
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xC1, 0, tracker.before_context_destroy());
  loop(0x500000, 50);
  tracker.on_alloc(event(0x6000, 6));  // leaks at exit
  loop(0x600000, 50);
  tracker.finish_process();
  process = replay(tracker);
  std::vector<LeakKey> leaks;
  for (const report::LeaseEnding &ending : process.leases)
    for (const report::Leak &leak : ending.leaks)
      leaks.emplace_back(leak.address, leak.bytes, ending.id, ending.ended_by);
  return leaks;
}

TEST(CompactJournal, LeaksLateFreesAndCountsAreThoseOfAFullJournal) {
  report::ProcessReport full, compact;
  const std::vector<LeakKey> full_leaks = leaks_of_a_mixed_workload(JournalMode::Full, full);
  const std::vector<LeakKey> compact_leaks = leaks_of_a_mixed_workload(JournalMode::Compact, compact);
  EXPECT_EQ(full_leaks.size(), 4u);
  EXPECT_EQ(compact_leaks, full_leaks);
  EXPECT_EQ(compact.late_frees, full.late_frees);
  EXPECT_EQ(compact.late_frees, 1u);
  EXPECT_EQ(compact.allocations, full.allocations);
  EXPECT_EQ(compact.frees, full.frees);
  // Each loop's first allocation comes after a record that is not its thread's last
  // allocation freed in place, and keeps its record; the other 49 of each are written over.
  EXPECT_EQ(compact.recycled_allocations, 6u * 49);
  EXPECT_EQ(full.recycled_allocations, 0u);
}

}  // namespace
}  // namespace leaseguard
