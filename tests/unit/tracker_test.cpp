// The core as the preload drives it, checked through the report its journal yields.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <map>
#include <set>
#include <thread>

#include "report_model.h"
#include "symbolizer.h"
#include "test_support.h"
#include "tracker_test_support.h"
#include "code_generation.h"
#include "journal_reader.h"
#include "last_stack.h"
#include "tracker.h"

namespace leaseguard {
namespace {

__attribute__((noinline)) void allocate_from_a_named_function(Tracker &tracker) {
  tracker.on_alloc(event(0x9000, 4242));
  asm volatile("");
}

TEST(Tracker, RecordsLeaksWithTheirStacks) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  allocate_from_a_named_function(tracker);
  tracker.on_alloc(event(0xA000, 100));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0xA000), FreeOutcome::Known);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0xA000), FreeOutcome::Unknown);  // double free
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
  ASSERT_TRUE(report.processes[0].has_stack(lease.leaks[0].stack_id));
  const report::StackView stack = report.processes[0].stack(lease.leaks[0].stack_id);
  bool found = std::any_of(stack.begin(), stack.end(), [](const report::Frame &frame) {
    return frame.function && frame.function->find("allocate_from_a_named_function") != std::string::npos;
  });
  EXPECT_TRUE(found);
}

// What a hook does: record an allocation with the walk starting at its caller. The start of
// each walk is kept, so a test can tell that two walks began at the same place.
WalkStart g_last_start;
__attribute__((noinline)) void hook_like_allocation(Tracker &tracker, uint64_t address) {
  AllocationEvent e = event(address, 16);
  e.caller = walk_start_above(__builtin_frame_address(0));
  g_last_start = e.caller;
  tracker.on_alloc(e);
  asm volatile("");
}
// One call site of the hook, reached through either of two callers of the same shape: the
// walk starts at the same instruction and stack address either way, and only a word further
// up the stack (a return address) tells them apart.
__attribute__((noinline)) void allocating_leaf(Tracker &tracker, uint64_t address) {
  hook_like_allocation(tracker, address);
  asm volatile("");
}
__attribute__((noinline)) void through_caller_a(Tracker &tracker, uint64_t address) {
  allocating_leaf(tracker, address);
  asm volatile("");
}
__attribute__((noinline)) void through_caller_b(Tracker &tracker, uint64_t address) {
  allocating_leaf(tracker, address);
  asm volatile("");
}
__attribute__((noinline)) void allocate_through(Tracker &tracker, bool caller_b, uint64_t address) {
  if (caller_b) through_caller_b(tracker, address);
  else through_caller_a(tracker, address);
  asm volatile("");
}

std::map<uint64_t, uint32_t> stack_ids_by_address(Tracker &tracker) {
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  std::map<uint64_t, uint32_t> ids;
  for (const auto &lease : process.leases)
    for (const auto &leak : lease.leaks) ids[leak.address] = leak.stack_id;
  return ids;
}

TEST(Tracker, AStackCapturedAgainFromTheSamePlaceIsTheSameAndADifferentCallerIsNot) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 16));
  const bool through_b[] = {false, false, false, true, false};
  std::vector<WalkStart> starts;
  volatile int count = 5;  // one call site in a real loop: the frames below it are the same
  for (int i = 0; i < count; ++i) {
    allocate_through(tracker, through_b[i], 0x10000 + static_cast<uint64_t>(i) * 0x100);
    starts.push_back(g_last_start);
  }
  // The case that matters: the same start, a different stack above it.
  EXPECT_EQ(starts[3].pc, starts[0].pc);
  EXPECT_EQ(starts[3].sp, starts[0].sp);

  std::map<uint64_t, uint32_t> ids = stack_ids_by_address(tracker);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_NE(ids[0x10000], 0u);
  EXPECT_EQ(ids[0x10100], ids[0x10000]);
  EXPECT_EQ(ids[0x10200], ids[0x10000]);
  EXPECT_EQ(ids[0x10400], ids[0x10000]);
  EXPECT_NE(ids[0x10300], ids[0x10000]);
  EXPECT_NE(ids[0x10300], 0u);
}

// The leaf reached through `levels` more frames: each depth is a stack of its own.
__attribute__((noinline)) void allocate_nested(Tracker &tracker, int levels, uint64_t address) {
  if (levels == 0) allocating_leaf(tracker, address);
  else allocate_nested(tracker, levels - 1, address);
  asm volatile("");
}

TEST(Tracker, StacksFromTwoCallersInTurnAreEachTheirOwnEveryTime) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 16));
  volatile int count = 8;
  for (int i = 0; i < count; ++i) allocate_through(tracker, i % 2 == 1, 0x10000 + static_cast<uint64_t>(i) * 0x100);
  std::map<uint64_t, uint32_t> ids = stack_ids_by_address(tracker);
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_NE(ids[0x10000], 0u);
  EXPECT_NE(ids[0x10100], 0u);
  EXPECT_NE(ids[0x10000], ids[0x10100]);
  for (uint64_t i = 2; i < 8; ++i) EXPECT_EQ(ids[0x10000 + i * 0x100], ids[0x10000 + (i % 2) * 0x100]) << i;
}

// More places in turn than a thread keeps stacks for: each is walked again, and still right.
TEST(Tracker, StacksFromMorePlacesInTurnThanAreKeptAreStillEachTheirOwn) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 16));
  constexpr int kPlaces = static_cast<int>(LastStacks::kKept) + 2;
  constexpr int kRounds = 3;
  volatile int rounds = kRounds;  // a real loop: the frames below each call site are the same
  for (int round = 0; round < rounds; ++round)
    for (int place = 0; place < kPlaces; ++place)
      allocate_nested(tracker, place, 0x10000 + static_cast<uint64_t>(round * kPlaces + place) * 0x100);
  std::map<uint64_t, uint32_t> ids = stack_ids_by_address(tracker);
  ASSERT_EQ(ids.size(), static_cast<size_t>(kRounds * kPlaces));
  std::set<uint32_t> distinct;
  for (int place = 0; place < kPlaces; ++place) {
    const uint32_t first = ids[0x10000 + static_cast<uint64_t>(place) * 0x100];
    EXPECT_NE(first, 0u);
    distinct.insert(first);
    for (int round = 1; round < kRounds; ++round)
      EXPECT_EQ(ids[0x10000 + static_cast<uint64_t>(round * kPlaces + place) * 0x100], first) << place;
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kPlaces));
}

TEST(Tracker, AStackCapturedAfterAnUnloadIsWalkedAgain) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 16));
  volatile int count = 3;
  for (int i = 0; i < count; ++i) {
    if (i == 2) note_code_unloaded();  // the same addresses may now be other code: a stack of its own
    allocate_through(tracker, false, 0x10000 + static_cast<uint64_t>(i) * 0x100);
  }
  std::map<uint64_t, uint32_t> ids = stack_ids_by_address(tracker);
  EXPECT_EQ(ids[0x10100], ids[0x10000]);
  EXPECT_NE(ids[0x10200], ids[0x10000]);
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
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xAAA, 0, tracker.before_context_destroy());
  EXPECT_EQ(tracker.live_allocations(), 2u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Unknown);  // gone with its context
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::ContextDestroy);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 1u);
  EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);
  EXPECT_EQ(process.leases[1].leaks.size(), 2u);
}

// Without a journal the context of each allocation comes from the side store, and a destroy
// still takes exactly its own context's memory with it; the side store gives entries back.
TEST(Tracker, ContextDestroyWithoutAJournalStillKnowsEachAllocationsContext) {
  testing::TempDir dir;
  Tracker tracker(options_without_a_journal(dir));
  tracker.on_alloc(event(0x1000, 1, 0xAAA));
  tracker.on_alloc(event(0x2000, 2, 0xAAA, Kind::Async));
  tracker.on_alloc(event(0x3000, 3, 0xBBB));
  const size_t with_three = tracker.live_record_bytes();
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xAAA, 0, tracker.before_context_destroy());
  EXPECT_EQ(tracker.live_allocations(), 2u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Unknown);  // gone with its context
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);    // pool memory outlives it
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x3000), FreeOutcome::Known);
  for (uint64_t i = 1; i <= 3; ++i) tracker.on_alloc(event(i * 0x1000, 1));
  EXPECT_EQ(tracker.live_allocations(), 3u);
  EXPECT_EQ(tracker.live_record_bytes(), with_three);  // the freed entries were reused
  tracker.finish_process();
}

// The driver may give a destroyed context's handle to a new context as soon as the destroy
// returns, and another thread may allocate in it before the destroy hook records anything:
// such an allocation names the destroyed handle but is not gone with it. What decides is
// whether it was recorded before the destroy began (the mark taken before the driver call).
TEST(Tracker, AnAllocationRecordedAfterADestroyBeganDoesNotGoWithIt) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  tracker.on_alloc(event(0x1000, 1, 0xAAA));
  const ContextDestroyMark mark = tracker.before_context_destroy();
  tracker.on_alloc(event(0x2000, 2, 0xAAA));  // in the new context that was given 0xAAA
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xAAA, 0, mark);
  EXPECT_EQ(tracker.live_allocations(), 1u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Unknown);  // gone with its context
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::ContextDestroy);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].address, 0x1000u);
  EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);
  ASSERT_EQ(process.leases[1].leaks.size(), 1u);
  EXPECT_EQ(process.leases[1].leaks[0].address, 0x2000u);
}

// The same without a journal: the side store's records are told apart by the tracker's barrier count.
TEST(Tracker, WithoutAJournalAnAllocationRecordedAfterADestroyBeganDoesNotGoWithIt) {
  testing::TempDir dir;
  Tracker tracker(options_without_a_journal(dir));
  tracker.on_alloc(event(0x1000, 1, 0xAAA));
  const ContextDestroyMark mark = tracker.before_context_destroy();
  tracker.on_alloc(event(0x2000, 2, 0xAAA));
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xAAA, 0, mark);
  EXPECT_EQ(tracker.live_allocations(), 1u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Unknown);
  tracker.finish_process();
}

// Allocation ids are taken in blocks per thread: every allocation still gets its own id, and
// the report lists leaks in the order the journal recorded the allocations, not by id.
struct AllocOrder : journal::JournalVisitor {
  std::vector<uint64_t> ids;
  void on_alloc(const journal::AllocPayload &alloc) override { ids.push_back(alloc.id); }
};

TEST(Tracker, AllocationsOnManyThreadsHaveDistinctIdsAndAreReportedInJournalOrder) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  constexpr uint64_t kThreads = 4, kPerThread = 700;  // more than one block of ids each
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&tracker, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) tracker.on_alloc(event(((t + 1) << 32) + i * 256, 1));
    });
  for (std::thread &thread : threads) thread.join();
  tracker.finish_process();

  AllocOrder order;
  journal::ReadStats stats;
  std::string error;
  ASSERT_TRUE(journal::read_journal(tracker.journal_path(), order, stats, error)) << error;
  ASSERT_EQ(order.ids.size(), kThreads * kPerThread);
  EXPECT_EQ(std::set<uint64_t>(order.ids.begin(), order.ids.end()).size(), kThreads * kPerThread);

  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 1u);
  std::vector<uint64_t> reported;
  for (const report::Leak &leak : process.leases[0].leaks) reported.push_back(leak.id);
  EXPECT_EQ(reported, order.ids);
}

// In journal order: each thread's records in its order, and another thread's after a run of
// this thread's that its own record ended (here, a free of its own record: the thread's next
// allocation then takes slots after everything before it).
TEST(Tracker, LeaksAreListedInAllocationOrderWhateverTheirIds) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  tracker.on_alloc(event(0x1000, 1));                                      // this thread's first block of ids
  std::thread([&tracker] { tracker.on_alloc(event(0x2000, 2)); }).join();  // the next block
  tracker.on_free(Api::cuMemFree_v2, 0xdead000);                           // unknown: a record of its own
  tracker.on_alloc(event(0x3000, 3));                                      // this thread's block again
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 1u);
  std::vector<uint64_t> addresses, ids;
  for (const report::Leak &leak : process.leases[0].leaks) {
    addresses.push_back(leak.address);
    ids.push_back(leak.id);
  }
  EXPECT_EQ(addresses, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
  EXPECT_GT(ids[1], ids[2]);  // the second allocation's id is the largest: order is not by id
}

size_t journal_threads() {
  size_t count = 0;
  for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    count += name == "leaseguard-jrnl" ? 1 : 0;
  }
  return count;
}

// The journal's prefaulting thread starts only once a megabyte of journal has been written:
// a program that records a few allocations keeps the threads it had.
TEST(Tracker, TheJournalThreadStartsOnlyForAProgramThatRecordsMuch) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  for (uint64_t i = 0; i < 1000; ++i) tracker.on_alloc(event(0x100000 + i * 256, 1));
  EXPECT_EQ(journal_threads(), 0u);
  for (uint64_t i = 1000; i < 40000; ++i) tracker.on_alloc(event(0x100000 + i * 256, 1));
  // The thread names itself once it runs: give a busy machine time to schedule it.
  for (int i = 0; i < 500 && journal_threads() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(journal_threads(), 1u);
  tracker.finish_process();
  EXPECT_EQ(journal_threads(), 0u);  // joined when recording ends
}

// The memory budget (bench/README.md): at most 64 bytes per live record, the table's free
// slots included, from a thousand live allocations to a million.
TEST(Tracker, ALiveRecordCostsAtMost64Bytes) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  uint64_t live = 0;
  for (uint64_t target : {1000u, 30000u, 100000u, 300000u}) {
    for (; live < target; ++live) tracker.on_alloc(event(0x700000000000ull + live * 512, 256));
    EXPECT_EQ(tracker.live_allocations(), target);
    EXPECT_LE(static_cast<double>(tracker.live_record_bytes()) / static_cast<double>(target), 64.0) << target;
  }
  tracker.finish_process();
}

// Frees stored in place on many threads at once: the replay applies each before every
// record journaled after the free began, so the peak it reads is never above what the
// threads could hold at once, and at least what one thread held.
TEST(Tracker, PeaksFromFreesInPlaceOnManyThreadsLieWithinWhatWasLive) {
  for (const JournalMode mode : {JournalMode::Full, JournalMode::Compact}) {
    SCOPED_TRACE(mode == JournalMode::Full ? "full" : "compact");
    testing::TempDir dir;
    Options options = options_for(dir, 0);
    options.journal_mode = mode;
    Tracker tracker(options);
    constexpr uint64_t kThreads = 4, kHeld = 8, kRounds = 400, kBytes = 1000;
    std::vector<std::thread> threads;
    for (uint64_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&tracker, t] {
        for (uint64_t round = 0; round < kRounds; ++round) {
          for (uint64_t i = 0; i < kHeld; ++i) tracker.on_alloc(event(((t + 1) << 32) + i * 4096, kBytes));
          for (uint64_t i = 0; i < kHeld; ++i) tracker.on_free(Api::cuMemFree_v2, ((t + 1) << 32) + i * 4096);
        }
      });
    for (std::thread &thread : threads) thread.join();
    tracker.finish_process();
    report::ProcessReport process = replay(tracker);
    ASSERT_EQ(process.leases.size(), 1u);
    EXPECT_TRUE(process.leases[0].leaks.empty());
    EXPECT_EQ(process.frees, kThreads * kHeld * kRounds);
    EXPECT_LE(process.leases[0].peak_bytes, kThreads * kHeld * kBytes);
    // A compact journal's allocations written over are in no peak: only its bound holds.
    if (mode == JournalMode::Full) {
      EXPECT_GE(process.leases[0].peak_bytes, kHeld * kBytes);
    }
  }
}

// The unseen free is journaled before the allocation that was given the address again, as
// it happened: the two never count as live together.
TEST(Tracker, ReusedAddressClosesTheUnseenFreeFirst) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  tracker.on_alloc(event(0x1000, 100));
  tracker.on_alloc(event(0x1000, 50));  // the driver handed the address out again
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.at(0).leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 50u);
  EXPECT_EQ(process.leases[0].peak_bytes, 100u);
  EXPECT_EQ(process.frees, 1u);
}

// Which frees the journal holds in their allocation's record, and which as records.
struct FreeShapes : journal::JournalVisitor {
  std::map<uint64_t, uint32_t> freed_in_place;  // allocation address -> the word
  std::vector<uint64_t> free_records;           // addresses
  void on_alloc(const journal::AllocPayload &alloc) override {
    if (alloc.freed_in_place != 0) freed_in_place[alloc.address] = alloc.freed_in_place;
  }
  void on_free(const journal::FreePayload &free_record) override { free_records.push_back(free_record.address); }
};

// A free in place says where in the journal it happened: how many slots after its
// allocation's record the next record went.
struct AllocSlots : journal::JournalVisitor {
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> by_address;  // -> its slot, the word in place
  void on_alloc(const journal::AllocPayload &alloc) override {
    by_address[alloc.address] = {record_slot(), alloc.freed_in_place};
  }
};

TEST(Tracker, AFreeInPlaceNamesTheSlotItCameBefore) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  tracker.on_alloc(event(0x1000, 1));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Known);  // before anything else
  tracker.on_alloc(event(0x2000, 2));
  tracker.on_alloc(event(0x3000, 3));
  tracker.on_alloc(event(0x4000, 4));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);  // after 0x4000's record
  tracker.finish_process();

  AllocSlots slots;
  journal::ReadStats stats;
  std::string error;
  ASSERT_TRUE(journal::read_journal(tracker.journal_path(), slots, stats, error)) << error;
  const uint32_t distance_mask = journal::kFreedInPlaceMaxSlots;
  EXPECT_EQ(slots.by_address[0x1000].second & distance_mask, 1u);
  EXPECT_EQ(slots.by_address[0x2000].first + (slots.by_address[0x2000].second & distance_mask),
            slots.by_address[0x4000].first + 1);
  EXPECT_EQ(slots.by_address[0x3000].second, 0u);
}

TEST(Tracker, FreesAreWrittenInPlaceUntilALeaseEndsAfterTheirAllocation) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  tracker.on_alloc(event(0x1000, 1));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Known);  // in place
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Report);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  tracker.on_alloc(event(0x2000, 2));
  ASSERT_EQ(tracker.lease_leave(), 0);
  tracker.on_alloc(event(0x3000, 3));
  tracker.on_alloc(event(0x4000, 4));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x4000), FreeOutcome::Known);  // in place
  EXPECT_EQ(tracker.lease_end(lease), 1);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x3000), FreeOutcome::Known);  // after the end: a record
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);  // late: a record
  tracker.on_alloc(event(0x5000, 5));
  EXPECT_EQ(tracker.on_free(Api::cuMemFreeAsync, 0x5000), FreeOutcome::Known);  // in place again
  tracker.finish_process();

  FreeShapes shapes;
  journal::ReadStats stats;
  std::string error;
  ASSERT_TRUE(journal::read_journal(tracker.journal_path(), shapes, stats, error)) << error;
  ASSERT_EQ(shapes.freed_in_place.size(), 3u);
  EXPECT_EQ(shapes.freed_in_place[0x1000] >> journal::kFreedInPlaceApiShift, static_cast<uint32_t>(Api::cuMemFree_v2));
  EXPECT_EQ(shapes.freed_in_place.count(0x4000), 1u);
  EXPECT_EQ(shapes.freed_in_place[0x5000] >> journal::kFreedInPlaceApiShift,
            static_cast<uint32_t>(Api::cuMemFreeAsync));
  EXPECT_EQ(shapes.free_records, (std::vector<uint64_t>{0x3000, 0x2000}));

  report::ProcessReport process = replay(tracker);
  EXPECT_EQ(process.frees, 5u);
  EXPECT_EQ(process.late_frees, 1u);
  ASSERT_EQ(process.leases.size(), 2u);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 2u);
  EXPECT_TRUE(process.leases[1].leaks.empty());
}

// A journal takes disk space for what was written, not for the chunk it was mapped in
// (a huge folio would be written back whole) or what was faulted in ahead.
TEST(Tracker, AProgramThatRecordsLittleLeavesASmallJournal) {
  testing::TempDir dir;
  std::string path;
  {
    Tracker tracker(options_for(dir));
    for (uint64_t i = 0; i < 100; ++i) tracker.on_alloc(event(0x1000 + i * 256, 64));
    tracker.finish_process();
    path = tracker.journal_path();
  }
  struct stat status {};
  ASSERT_EQ(stat(path.c_str(), &status), 0);
  EXPECT_LE(status.st_blocks * 512, 256 * 1024)
      << "a 100-allocation journal takes " << status.st_blocks * 512 << " bytes on disk";
}

TEST(Tracker, TtlExpiryReportsLiveAllocationsAndLaterFreesAreLate) {
  testing::TempDir dir;
  Options options = options_for(dir);
  // Long enough that the first allocation (which also opens the journal) completes before
  // the expiry even under ThreadSanitizer on a loaded machine.
  options.ttl_ms = 1000;
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
  tracker.on_alloc(event(0x2000, 22));                // after expiry: live at exit
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  EXPECT_EQ(process.late_frees, 1u);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::Expiry);
  EXPECT_EQ(process.leases[0].ttl_ms, 1000u);
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

namespace leaseguard {
namespace {

// Records what the core asks to free; a unit-test stand-in for the driver-facing backend
// (the real one is exercised by the victims under the preload).
class RecordingBackend : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override {
    released.push_back(record.address);
    records.push_back(record);
    return record.address == fail_address ? 999 : 0;
  }
  std::vector<uint64_t> released;
  std::vector<HandleRecord> records;  // everything each release was handed
  uint64_t fail_address = 0;
};

TEST(Reclaim, EndingAReclaimLeaseFreesItsLeaksNewestFirstAndSwallowsLateFrees) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  RecordingBackend backend;
  tracker.set_reclaim_backend(&backend);
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  tracker.on_alloc(event(0x1000, 10));
  tracker.on_alloc(event(0x2000, 20));
  tracker.on_alloc(event(0x3000, 30));
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);
  ASSERT_EQ(tracker.lease_leave(), 0);
  EXPECT_EQ(tracker.lease_end(lease), 2);
  EXPECT_EQ(backend.released, (std::vector<uint64_t>{0x3000, 0x1000}));
  EXPECT_EQ(tracker.live_allocations(), 0u);
  // The program's late free: swallowed once, then the address is unknown again.
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Reclaimed);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Unknown);
  tracker.finish_process();

  report::ProcessReport process = replay(tracker);
  ASSERT_GE(process.leases.size(), 1u);
  const report::LeaseEnding &job = process.leases[0];
  EXPECT_EQ(job.name, "job");
  EXPECT_EQ(job.policy, Policy::Reclaim);
  ASSERT_EQ(job.leaks.size(), 2u);
  for (const auto &leak : job.leaks) EXPECT_TRUE(leak.reclaimed);
  EXPECT_EQ(job.peak_bytes, 60u);
  ASSERT_EQ(job.late_frees.size(), 1u);
  EXPECT_FALSE(job.late_frees[0].forwarded);
  EXPECT_EQ(job.late_frees[0].address, 0x1000u);
  EXPECT_NE(job.late_frees[0].stack_id, 0u);
  EXPECT_EQ(process.late_frees, 1u);
}

// A VMM handle retained in two leases holds a reference in each. One lease reclaiming its
// reference leaves the other's live: after the reclaimed one's late release, the next
// release is the other lease's, known and forwarded, not an unknown free.
TEST(Reclaim, AHandleStillHeldByAnotherLeaseIsReleasedAfterOneLeaseReclaimedItsReference) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  RecordingBackend backend;
  tracker.set_reclaim_backend(&backend);
  auto handle = [](Api api, uint64_t bytes) {
    AllocationEvent e = event(0x4400, bytes);
    e.api = api;
    e.kind = Kind::Vmm;
    return e;
  };
  const uint64_t reclaiming = tracker.lease_begin("reclaiming", 0, Policy::Reclaim);
  ASSERT_EQ(tracker.lease_enter(reclaiming), 0);
  tracker.on_alloc(handle(Api::cuMemCreate, 10));
  ASSERT_EQ(tracker.lease_leave(), 0);
  const uint64_t holding = tracker.lease_begin("holding", 0, Policy::Report);
  ASSERT_EQ(tracker.lease_enter(holding), 0);
  tracker.on_alloc(handle(Api::cuMemRetainAllocationHandle, 10));
  ASSERT_EQ(tracker.lease_leave(), 0);
  EXPECT_EQ(tracker.lease_end(reclaiming), 1);
  EXPECT_EQ(backend.released, (std::vector<uint64_t>{0x4400}));
  EXPECT_EQ(tracker.on_free(Api::cuMemRelease, 0x4400), FreeOutcome::Reclaimed);  // the reclaimed one's
  EXPECT_EQ(tracker.on_free(Api::cuMemRelease, 0x4400), FreeOutcome::Known);      // the holding lease's
  EXPECT_EQ(tracker.live_allocations(), 0u);
  EXPECT_EQ(tracker.lease_end(holding), 0);
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  EXPECT_EQ(process.unknown_frees, 0u);
  EXPECT_EQ(process.leaked_allocations(), 1u);  // the reclaimed reference, reported as such
}

// The documented choice for the address-reuse hazard: after the driver hands a reclaimed
// address out again, the next free of it is still taken as the late free of the reclaimed
// allocation and swallowed, so the late free can never free the new owner's memory. The
// new owner's own free, after that, reaches the driver.
TEST(Reclaim, AReissuedAddressKeepsItsNewOwnerSafeFromTheLateFree) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  RecordingBackend backend;
  tracker.set_reclaim_backend(&backend);
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
  tracker.lease_enter(lease);
  tracker.on_alloc(event(0x1000, 10));
  tracker.lease_leave();
  EXPECT_EQ(tracker.lease_end(lease), 1);
  tracker.on_alloc(event(0x1000, 99));                                            // the driver reissued the address
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Reclaimed);  // the late free
  EXPECT_EQ(tracker.live_allocations(), 1u);                                      // new owner intact
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Known);      // its own free
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  EXPECT_EQ(process.late_frees, 1u);
  EXPECT_EQ(process.leaked_allocations(), 1u);  // only the reclaimed one
}

TEST(Reclaim, AFailedReclaimLeavesTheAllocationToTheProgramsFree) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  RecordingBackend backend;
  backend.fail_address = 0x1000;
  tracker.set_reclaim_backend(&backend);
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
  tracker.lease_enter(lease);
  tracker.on_alloc(event(0x1000, 10));
  tracker.lease_leave();
  EXPECT_EQ(tracker.lease_end(lease), 1);
  // Still allocated on the device: the program's free must reach the driver.
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Known);
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.at(0).leaks.size(), 1u);
  EXPECT_FALSE(process.leases[0].leaks[0].reclaimed);
  ASSERT_EQ(process.leases[0].late_frees.size(), 1u);
  EXPECT_TRUE(process.leases[0].late_frees[0].forwarded);
}

// The table keeps 32 bytes of a live allocation; what a reclaim needs besides (its size,
// context, device, kind and id) is read back from its journal record, or, when there is no
// journal, from the side store. Either way the backend is handed all of it.
void expect_reclaim_gets_every_field(const Options &options) {
  Tracker tracker(options);
  RecordingBackend backend;
  tracker.set_reclaim_backend(&backend);
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
  ASSERT_NE(lease, 0u);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  AllocationEvent managed = event(0x5000, (uint64_t{1} << 40) + 3, 0xC7, Kind::Managed);
  managed.api = Api::cuMemAllocManaged;
  managed.device = 3;
  tracker.on_alloc(event(0x4000, 77, 0xC6));
  tracker.on_alloc(managed);
  ASSERT_EQ(tracker.lease_leave(), 0);
  EXPECT_EQ(tracker.lease_end(lease), 2);
  ASSERT_EQ(backend.records.size(), 2u);
  const HandleRecord &newest = backend.records[0];
  const HandleRecord &oldest = backend.records[1];
  EXPECT_EQ(newest.address, 0x5000u);
  EXPECT_EQ(newest.api, Api::cuMemAllocManaged);
  EXPECT_EQ(newest.bytes, (uint64_t{1} << 40) + 3);
  EXPECT_EQ(newest.context, 0xC7u);
  EXPECT_EQ(newest.device, 3);
  EXPECT_EQ(newest.kind, Kind::Managed);
  EXPECT_EQ(oldest.address, 0x4000u);
  EXPECT_EQ(oldest.bytes, 77u);
  EXPECT_EQ(oldest.context, 0xC6u);
  EXPECT_EQ(oldest.kind, Kind::Device);
  EXPECT_GT(newest.id, oldest.id);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x4000), FreeOutcome::Reclaimed);
  tracker.finish_process();
}

TEST(Reclaim, TheBackendGetsEveryFieldFromTheJournal) {
  testing::TempDir dir;
  expect_reclaim_gets_every_field(options_for(dir));
}

TEST(Reclaim, TheBackendGetsEveryFieldWithoutAJournal) {
  testing::TempDir dir;
  expect_reclaim_gets_every_field(options_without_a_journal(dir));
}

// "If the lease has already expired, the teardown has already freed the device memory"
// (the seed): a thread that is told a lease expired must find its leaks given back, even
// while the expiry is still reclaiming them on the watchdog's thread.
class SlowBackend : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    released.push_back(record.address);
    return 0;
  }
  std::vector<uint64_t> released;  // read only once the lease is told expired
};

TEST(Reclaim, ALeaseIsToldExpiredOnlyOnceItsLeaksAreGivenBack) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  SlowBackend backend;
  tracker.set_reclaim_backend(&backend);
  // An hour: the lease is open while its allocations are made however loaded the machine;
  // then the watchdog's clock is moved past it, and the test waits for the expiry.
  uint64_t lease = tracker.lease_begin("job", 3'600'000, Policy::Reclaim);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  tracker.on_alloc(event(0x1000, 10));
  tracker.on_alloc(event(0x2000, 20));
  ASSERT_EQ(tracker.lease_leave(), 0);
  ASSERT_EQ(tracker.lease_state(lease), LeaseState::Open);
  tracker.advance_lease_clock(uint64_t{3'600'001} * 1'000'000);
  LeaseState state = LeaseState::Open;
  for (int i = 0; i < 10000 && state == LeaseState::Open; ++i) {
    state = tracker.lease_state(lease);
    if (state == LeaseState::Open) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(state, LeaseState::Expired);
  EXPECT_EQ(backend.released.size(), 2u);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Reclaimed);
  tracker.finish_process();
}

// A thread asking about a lease that another thread is still reclaiming waits for the
// reclaim (above) asleep: it must not spin on a core for as long as the driver takes to
// give the memory back.
// A driver slow to release (150 ms a call): what a thread asking about the lease meanwhile does.
class StalledBackend : public ReclaimBackend {
 public:
  int release(const HandleRecord &) noexcept override {
    if (!started_once.exchange(true)) started.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    released.fetch_add(1);
    return 0;
  }
  std::atomic<bool> started_once{false};
  std::promise<void> started;
  std::atomic<int> released{0};
};

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

TEST(Reclaim, AThreadAskingAboutALeaseBeingReclaimedWaitsAsleep) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  StalledBackend backend;
  tracker.set_reclaim_backend(&backend);
  uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
  ASSERT_EQ(tracker.lease_enter(lease), 0);
  for (uint64_t i = 0; i < 3; ++i) tracker.on_alloc(event(0x1000 + i * 0x1000, 10));
  ASSERT_EQ(tracker.lease_leave(), 0);
  std::thread ender([&] { tracker.lease_end(lease); });
  backend.started.get_future().wait();  // the reclaim is under way
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_ms();
  EXPECT_EQ(tracker.lease_state(lease), LeaseState::Ended);
  const double cpu_ms = thread_cpu_ms() - cpu_start;
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count();
  EXPECT_EQ(backend.released.load(), 3) << "lease_state answered before the reclaim was done";
  ender.join();
  // A spinning waiter burns about as much CPU as it waits (~300 ms here); a sleeping one a
  // few milliseconds of wake-ups.
  EXPECT_LT(cpu_ms, wall_ms / 4) << "waited " << wall_ms << " ms, using " << cpu_ms << " ms of CPU";
  tracker.finish_process();
}

// A program freeing allocations while their lease ends with policy reclaim: each allocation
// is given back exactly once, by the program's free (forwarded to the driver) or by the
// reclaim, never by both and never by neither.
class CountingBackend : public ReclaimBackend {
 public:
  int release(const HandleRecord &) noexcept override {
    released.fetch_add(1);
    return 0;
  }
  std::atomic<int> released{0};
};

TEST(Reclaim, AFreeRacingTheReclaimOfItsLeaseIsNeverAlsoReclaimed) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 0));
  CountingBackend backend;
  tracker.set_reclaim_backend(&backend);
  constexpr int kRounds = 100, kAllocations = 64;
  int forwarded = 0;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t lease = tracker.lease_begin("job", 0, Policy::Reclaim);
    ASSERT_EQ(tracker.lease_enter(lease), 0);
    for (int i = 0; i < kAllocations; ++i) tracker.on_alloc(event(0x100000 + static_cast<uint64_t>(i) * 0x1000, 1));
    ASSERT_EQ(tracker.lease_leave(), 0);
    std::thread ender([&] { tracker.lease_end(lease); });
    for (int i = 0; i < kAllocations; ++i)
      if (tracker.on_free(Api::cuMemFree_v2, 0x100000 + static_cast<uint64_t>(i) * 0x1000) != FreeOutcome::Reclaimed)
        ++forwarded;  // the hook passes Known and Unknown frees on to the driver
    ender.join();
  }
  EXPECT_EQ(forwarded + backend.released.load(), kRounds * kAllocations);
  tracker.finish_process();
}

TEST(Reclaim, AtExitLeaksAreReportedNotReclaimed) {
  testing::TempDir dir;
  Options options = options_for(dir);
  options.on_expiry = Policy::Reclaim;
  Tracker tracker(options);
  RecordingBackend backend;
  tracker.set_reclaim_backend(&backend);
  tracker.on_alloc(event(0x1000, 10));
  tracker.finish_process();
  EXPECT_TRUE(backend.released.empty());
  // And reported: the process lease's ending at exit lists it, not reclaimed.
  report::ProcessReport process = replay(tracker);
  const report::LeaseEnding *at_exit = nullptr;
  for (const auto &ending : process.leases)
    if (ending.name == "process" && ending.ended_by == EndedBy::Exit) at_exit = &ending;
  ASSERT_NE(at_exit, nullptr);
  ASSERT_EQ(at_exit->leaks.size(), 1u);
  EXPECT_EQ(at_exit->leaks[0].address, 0x1000u);
  EXPECT_FALSE(at_exit->leaks[0].reclaimed);
}

TEST(Leases, AThreadWhoseEnteredLeaseWasEndedElsewhereAllocatesIntoTheProcessLease) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  uint64_t lease = tracker.lease_begin("short", 0, Policy::Report);
  tracker.lease_enter(lease);
  std::thread([&] { EXPECT_EQ(tracker.lease_end(lease), 0); }).join();  // ended elsewhere
  tracker.on_alloc(event(0x1000, 10));                                  // this thread still has it entered
  tracker.lease_leave();
  tracker.finish_process();
  report::ProcessReport process = replay(tracker);
  bool found = false;
  for (const auto &ending : process.leases)
    if (ending.name == "process") found = ending.leaks.size() == 1;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace leaseguard

namespace leaseguard {
namespace {

__attribute__((noinline)) void allocate_many_from_one_place(Tracker &tracker, int count) {
  for (int i = 0; i < count; ++i) tracker.on_alloc(event(0x100000 + static_cast<uint64_t>(i) * 256, 8));
  asm volatile("");
}

TEST(Symbolizer, EachDistinctFrameIsLookedUpOnce) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  allocate_many_from_one_place(tracker, 100000);
  tracker.finish_process();
  report::Report report;
  report.processes.push_back(replay(tracker));
  ASSERT_EQ(report.leaked_allocations(), 100000u);
  size_t frames = 0;
  for (const auto &[id, stack] : report.processes[0].stacks) frames += stack.size();
  report::Symbolizer symbolizer;
  symbolizer.symbolize(report);
  EXPECT_LE(symbolizer.lookups(), frames);  // 100,000 leaks, one stack: its frames, once
  EXPECT_GT(symbolizer.lookups(), 0u);
}

}  // namespace
}  // namespace leaseguard
