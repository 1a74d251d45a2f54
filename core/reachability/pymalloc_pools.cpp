// Reading pymalloc's pools in place (pymalloc_pools.h).
#include "pymalloc_pools.h"

#include <cstring>
#include <iterator>

namespace leaseguard::reachability::pymalloc {
namespace {

// struct pool_header of Objects/obmalloc.c, on a 64-bit machine.
struct PoolHeader {
  uint32_t count;  // blocks in use (a union with a pointer: the upper half is padding)
  uint32_t padding;
  uint64_t free_block;  // the free list's first block, or 0
  uint64_t next_pool;
  uint64_t previous_pool;
  uint32_t arena_index;
  uint32_t size_index;       // the block size is (size_index + 1) * kAlignment
  uint32_t next_offset;      // where the blocks never handed out begin
  uint32_t max_next_offset;  // pool_bytes - block size
};
static_assert(sizeof(PoolHeader) == 48);

constexpr size_t kAlignment = 16;    // ALIGNMENT: every block size is a multiple of it
constexpr size_t kSizeClasses = 32;  // blocks of 16 to 512 bytes
constexpr size_t kFirstBlock = 48;   // POOL_OVERHEAD: the header, rounded up to kAlignment
constexpr size_t kMaxPoolBytes = 16384;
constexpr size_t kMaxBlocks = (kMaxPoolBytes - kFirstBlock) / kAlignment + 1;

// Reads memory that sanitizers may call poisoned or racy: the program's own, read on purpose.
__attribute__((no_sanitize("address", "thread"))) uint64_t load_word(uintptr_t at) noexcept {
  return *reinterpret_cast<const volatile uint64_t *>(at);
}

__attribute__((no_sanitize("address", "thread"))) PoolHeader load_header(uintptr_t pool) noexcept {
  PoolHeader header;
  const auto *from = reinterpret_cast<const volatile uint64_t *>(pool);
  uint64_t words[sizeof(PoolHeader) / 8];
  for (size_t i = 0; i < std::size(words); ++i) words[i] = from[i];
  std::memcpy(&header, words, sizeof header);
  return header;
}

}  // namespace

size_t pool_bytes_for(size_t arena_bytes) noexcept {
  const size_t pool_bytes = arena_bytes / kPoolsPerArena;
  const bool known = (pool_bytes == 4096 || pool_bytes == kMaxPoolBytes) && arena_bytes % kPoolsPerArena == 0;
  return known ? pool_bytes : 0;
}

size_t live_block_bound(uint32_t count_field, size_t pool_bytes) noexcept {
  const size_t most = (pool_bytes - kFirstBlock) / kAlignment;
  return count_field < most ? count_field : most;
}

PoolRead read_pool(uintptr_t pool, size_t pool_bytes, BlockVisitor visit, void *context) noexcept {
  if (pool_bytes > kMaxPoolBytes || pool_bytes < 4096) return PoolRead::Unreadable;
  const PoolHeader header = load_header(pool);
  static constexpr PoolHeader kZeros{};
  if (std::memcmp(&header, &kZeros, sizeof header) == 0) return PoolRead::Untouched;

  // The header's fields must agree: its size class, the offset past the last block that fits,
  // and the offset of the blocks never handed out, on a block boundary within the pool.
  if (header.size_index >= kSizeClasses) return PoolRead::Unreadable;
  const size_t block_bytes = (header.size_index + 1) * kAlignment;
  if (header.max_next_offset + block_bytes != pool_bytes) return PoolRead::Unreadable;
  if (header.next_offset < kFirstBlock || header.next_offset > pool_bytes ||
      (header.next_offset - kFirstBlock) % block_bytes != 0)
    return PoolRead::Unreadable;
  const size_t handed_out = (header.next_offset - kFirstBlock) / block_bytes;
  if (header.count == 0) return PoolRead::Empty;
  if (header.count > handed_out) return PoolRead::Unreadable;

  // The free list: each link a block handed out, on a boundary, never seen before.
  uint64_t free_blocks[kMaxBlocks / 64 + 1] = {};
  size_t free_count = 0;
  for (uint64_t at = header.free_block; at != 0; at = load_word(at)) {
    if (at < pool + kFirstBlock || at >= pool + header.next_offset) return PoolRead::Unreadable;
    const size_t offset = at - pool - kFirstBlock;
    if (offset % block_bytes != 0) return PoolRead::Unreadable;
    const size_t index = offset / block_bytes;
    if ((free_blocks[index / 64] >> (index % 64) & 1) != 0) return PoolRead::Unreadable;  // a loop
    free_blocks[index / 64] |= uint64_t{1} << (index % 64);
    ++free_count;
  }
  // A pool caught between an allocation's or a free's two stores reads one off: not trusted.
  if (handed_out - free_count != header.count) return PoolRead::Unreadable;

  for (size_t index = 0; index < handed_out; ++index)
    if ((free_blocks[index / 64] >> (index % 64) & 1) == 0)
      visit(context, pool + kFirstBlock + index * block_bytes, block_bytes);
  return PoolRead::Live;
}

}  // namespace leaseguard::reachability::pymalloc
