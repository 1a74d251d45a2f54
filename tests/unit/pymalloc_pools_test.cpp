// Reading pymalloc's pools (core/reachability/pymalloc_pools.h) over pools that the test lays out the way
// Objects/obmalloc.c does: its init_pool, pymalloc_alloc's pop from the free list or extension
// of the pool, and pymalloc_free's push.
#include "pymalloc_pools.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

namespace leaseguard::reachability::pymalloc {
namespace {

constexpr size_t kPoolBytes = 16384;
constexpr uint32_t kFirstBlock = 48;

// One pool, 16 KiB-aligned, whose header and free list the test writes as CPython would.
class Pool {
 public:
  Pool() : memory_(static_cast<char *>(std::aligned_alloc(kPoolBytes, kPoolBytes))) {
    std::memset(memory_, 0, kPoolBytes);
  }
  ~Pool() { std::free(memory_); }
  Pool(const Pool &) = delete;
  Pool &operator=(const Pool &) = delete;

  uintptr_t base() const { return reinterpret_cast<uintptr_t>(memory_); }
  uint32_t &word32(size_t offset) { return *reinterpret_cast<uint32_t *>(memory_ + offset); }
  uint64_t &word64(size_t offset) { return *reinterpret_cast<uint64_t *>(memory_ + offset); }
  uint32_t &count() { return word32(0); }
  uint64_t &free_block() { return word64(8); }
  uint32_t &size_index() { return word32(36); }
  uint32_t &next_offset() { return word32(40); }
  uint32_t &max_next_offset() { return word32(44); }
  uint32_t block_bytes() { return (size_index() + 1) * 16; }

  // init_pool: the first block handed out, the second on the free list.
  uintptr_t start(uint32_t index) {
    size_index() = index;
    word32(32) = 7;  // the arena's index
    count() = 1;
    next_offset() = kFirstBlock + 2 * block_bytes();
    max_next_offset() = kPoolBytes - block_bytes();
    free_block() = base() + kFirstBlock + block_bytes();
    word64(kFirstBlock + block_bytes()) = 0;
    return base() + kFirstBlock;
  }

  uintptr_t allocate() {
    ++count();
    const uintptr_t block = free_block();
    free_block() = *reinterpret_cast<uint64_t *>(block);
    if (free_block() == 0 && next_offset() <= max_next_offset()) {  // pymalloc_pool_extend
      free_block() = base() + next_offset();
      next_offset() += block_bytes();
      *reinterpret_cast<uint64_t *>(free_block()) = 0;
    }
    return block;
  }

  void release(uintptr_t block) {
    *reinterpret_cast<uint64_t *>(block) = free_block();
    free_block() = block;
    --count();
  }

  struct Read {
    PoolRead result;
    std::set<uintptr_t> blocks;
    std::set<size_t> sizes;
  };
  Read read() {
    Read read;
    read.result = read_pool(
        base(), kPoolBytes,
        [](void *context, uintptr_t address, size_t bytes) {
          auto &into = *static_cast<Read *>(context);
          into.blocks.insert(address);
          into.sizes.insert(bytes);
        },
        &read);
    return read;
  }

 private:
  char *memory_;
};

TEST(PymallocPools, ArenaSizesGiveTheirPoolSize) {
  EXPECT_EQ(pool_bytes_for(1 << 20), 16384u);   // Python 3.10 and later, 64-bit
  EXPECT_EQ(pool_bytes_for(256 << 10), 4096u);  // before
  EXPECT_EQ(pool_bytes_for(2 << 20), 0u);
  EXPECT_EQ(pool_bytes_for(4096), 0u);
  EXPECT_EQ(pool_bytes_for((1 << 20) + 4096), 0u);
  EXPECT_EQ(first_pool(0x7f0000001000, 16384), 0x7f0000004000u);
  EXPECT_EQ(first_pool(0x7f0000004000, 16384), 0x7f0000004000u);
}

TEST(PymallocPools, LiveBlocksAreTheOnesHandedOutAndNotFreed) {
  Pool pool;
  std::vector<uintptr_t> blocks{pool.start(5)};  // 96-byte blocks
  for (int i = 0; i < 40; ++i) blocks.push_back(pool.allocate());
  std::set<uintptr_t> live(blocks.begin(), blocks.end());
  for (size_t i : {3u, 4u, 17u, 39u, 0u}) {
    pool.release(blocks[i]);
    live.erase(blocks[i]);
  }
  const uintptr_t reused = pool.allocate();  // the last freed block, first on the list
  EXPECT_EQ(reused, blocks[0]);
  live.insert(reused);

  const Pool::Read read = pool.read();
  EXPECT_EQ(read.result, PoolRead::Live);
  EXPECT_EQ(read.blocks, live);
  EXPECT_EQ(read.sizes, (std::set<size_t>{96}));
}

TEST(PymallocPools, AFullPoolIsReadWhole) {
  Pool pool;
  std::set<uintptr_t> live{pool.start(31)};  // 512-byte blocks: 31 fit after the header
  while (pool.free_block() != 0) live.insert(pool.allocate());
  EXPECT_EQ(live.size(), (kPoolBytes - kFirstBlock) / 512);
  const Pool::Read read = pool.read();
  EXPECT_EQ(read.result, PoolRead::Live);
  EXPECT_EQ(read.blocks, live);
}

TEST(PymallocPools, PoolsWithNothingInUseAreNotRead) {
  Pool untouched;
  EXPECT_EQ(untouched.read().result, PoolRead::Untouched);

  Pool emptied;
  const uintptr_t first = emptied.start(0);
  const uintptr_t second = emptied.allocate();
  emptied.release(second);
  emptied.release(first);
  const Pool::Read read = emptied.read();
  EXPECT_EQ(read.result, PoolRead::Empty);
  EXPECT_TRUE(read.blocks.empty());
}

// Memory that is not a pool, or a pool caught between two of an operation's stores, is not
// read as one: the caller reads it whole instead.
TEST(PymallocPools, HeadersThatDisagreeAreUnreadable) {
  auto unreadable_after = [](auto damage) {
    Pool pool;
    pool.start(3);
    for (int i = 0; i < 10; ++i) pool.allocate();
    damage(pool);
    const Pool::Read read = pool.read();
    if (read.result != PoolRead::Unreadable) return false;
    EXPECT_TRUE(read.blocks.empty());
    return true;
  };
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.size_index() = 32; }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.max_next_offset() -= 16; }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.next_offset() += 16; }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.next_offset() = kPoolBytes + 64; }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.count() += 1; }));  // a free half done
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.count() = 1000; }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.free_block() += 8; }));      // off a boundary
  EXPECT_TRUE(unreadable_after([](Pool &pool) { pool.free_block() = 0x1000; }));  // out of the pool
  EXPECT_TRUE(unreadable_after([](Pool &pool) {                                   // a loop
    const uintptr_t head = pool.free_block();
    *reinterpret_cast<uint64_t *>(head) = head;
  }));
  EXPECT_TRUE(unreadable_after([](Pool &pool) {  // a link past the blocks handed out
    *reinterpret_cast<uint64_t *>(pool.free_block()) = pool.base() + pool.next_offset();
  }));
  // And the same pool undamaged reads.
  EXPECT_FALSE(unreadable_after([](Pool &) {}));
}

TEST(PymallocPools, OnlyKnownPoolSizesAreRead) {
  Pool pool;
  pool.start(0);
  EXPECT_EQ(read_pool(
                pool.base(), 32768, [](void *, uintptr_t, size_t) {}, nullptr),
            PoolRead::Unreadable);
  EXPECT_EQ(live_block_bound(5, kPoolBytes), 5u);
  EXPECT_EQ(live_block_bound(UINT32_MAX, kPoolBytes), (kPoolBytes - kFirstBlock) / 16);
}

}  // namespace
}  // namespace leaseguard::reachability::pymalloc
