// The host heap table (interpose/scan/heap_tracker.h), linked into this test binary as into
// the preload: this binary's malloc family is the tracked one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>

#include "heap_tracker.h"

namespace leaseguard::interpose {
namespace {

// What the preload's constructor does first (interpose/preload_main.cpp).
const bool g_heap_started = [] {
  heap::start();
  return true;
}();

std::map<uintptr_t, size_t> live_blocks() {
  std::map<uintptr_t, size_t> blocks;
  heap::for_each_block([](void *context, uintptr_t address, size_t bytes,
                          bool) { (*static_cast<std::map<uintptr_t, size_t> *>(context))[address] = bytes; },
                       &blocks);
  return blocks;
}

uintptr_t address_of(const void *block) { return reinterpret_cast<uintptr_t>(block); }

TEST(HeapTable, TheProgramsMallocIsTrackedWholly) {
  EXPECT_TRUE(heap::tracking());
  EXPECT_TRUE(heap::complete());
}

TEST(HeapTable, EveryAllocatorEntryPointRecordsItsBlockWithItsSize) {
  void *plain = std::malloc(100);
  void *cleared = std::calloc(3, 40);
  void *aligned = nullptr;
  ASSERT_EQ(posix_memalign(&aligned, 256, 200), 0);
  void *aligned_too = aligned_alloc(64, 128);
  void *empty = std::malloc(0);
  std::map<uintptr_t, size_t> blocks = live_blocks();  // the map's own nodes are recorded too
  EXPECT_EQ(blocks[address_of(plain)], 100u);
  EXPECT_EQ(blocks[address_of(cleared)], 120u);
  EXPECT_EQ(blocks[address_of(aligned)], 200u);
  EXPECT_EQ(blocks[address_of(aligned_too)], 128u);
  EXPECT_EQ(blocks[address_of(empty)], 1u);  // a block of no bytes still holds its address
  for (void *block : {plain, cleared, aligned, aligned_too, empty}) {
    EXPECT_TRUE(heap::tracks(address_of(block)));
    std::free(block);
    EXPECT_FALSE(heap::tracks(address_of(block)));
  }
}

TEST(HeapTable, AReallocatedBlockIsRecordedWhereItNowIsWithItsNewSize) {
  void *block = std::malloc(64);
  const uintptr_t before = address_of(block);
  void *moved = std::realloc(block, 1 << 20);  // past what can grow in place
  ASSERT_NE(moved, nullptr);
  EXPECT_TRUE(heap::tracks(address_of(moved)));
  EXPECT_EQ(live_blocks()[address_of(moved)], size_t{1} << 20);
  if (address_of(moved) != before) {
    EXPECT_FALSE(heap::tracks(before));
  }
  void *gone = std::realloc(moved, 0);  // glibc frees it
  EXPECT_FALSE(heap::tracks(address_of(moved)));
  std::free(gone);
}

TEST(HeapTable, ManyBlocksGrowTheTableAndAllAreFound) {
  const size_t before = heap::live_blocks();
  std::vector<void *> blocks(100000, nullptr);  // more than every shard's first table holds
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = std::malloc(24);
  EXPECT_GE(heap::live_blocks(), before + blocks.size());
  for (void *block : blocks) ASSERT_TRUE(heap::tracks(address_of(block)));
  for (void *block : blocks) std::free(block);
  EXPECT_LE(heap::live_blocks(), before + 1);  // the vector's own block
  EXPECT_TRUE(heap::complete());
}

TEST(HeapTable, ABlockMarkedLeaseguardsOwnIsListedAsSo) {
  void *block = std::calloc(1, 48);
  heap::mark_own(block);
  bool own = false;
  struct Seen {
    uintptr_t address;
    bool *own;
  } seen{address_of(block), &own};
  heap::for_each_block(
      [](void *context, uintptr_t address, size_t bytes, bool leaseguard_own) {
        auto *wanted = static_cast<Seen *>(context);
        if (address == wanted->address) *wanted->own = leaseguard_own && bytes == 48;
      },
      &seen);
  EXPECT_TRUE(own);
  std::free(block);
}

}  // namespace
}  // namespace leaseguard::interpose
