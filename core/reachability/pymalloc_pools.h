// CPython's small-object allocator (pymalloc, Objects/obmalloc.c) keeps every object of up to
// 512 bytes in pools it carves from arenas it maps itself: 64 pools an arena, 16 KiB pools in
// 1 MiB arenas since Python 3.10 on 64-bit machines, 4 KiB in 256 KiB before. A Python program's
// device pointers live in such objects (a ctypes value, an extension type's field), so the
// scan reads them; and reads them one by one, as it reads heap blocks: a freed object's words
// stay in its block, and read as live they would make dropped device memory reachable.
//
// A pool's header says which of its blocks were ever handed out (every one below its next
// offset) and how many are in use; its free list, threaded through the freed blocks' first
// words, says which of those are free. A block handed out and not on the list is live.
//
// The layout is CPython's, read in place with no Python headers, and checked rather than
// trusted: a header whose fields do not agree with each other (a size class, the offsets it
// implies, a count that matches the free list) is not read as a pool. The caller then reads
// that memory whole, which can only make more memory reachable, never less.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard::reachability::pymalloc {

constexpr size_t kPoolsPerArena = 64;

// The pool size of an arena mapping `arena_bytes` long, or 0 if no pymalloc arena has that size.
size_t pool_bytes_for(size_t arena_bytes) noexcept;

enum class PoolRead : uint8_t {
  Untouched,   // never used: its header is still the mapping's zeros
  Empty,       // a pool's header, with no block in use
  Live,        // a pool's header, with blocks in use (the visitor saw each)
  Unreadable,  // not a pool's header as pymalloc writes one (the visitor saw nothing)
};

using BlockVisitor = void (*)(void *context, uintptr_t address, size_t bytes);

// Reads the pool at `pool` (pool_bytes long, pool_bytes-aligned, readable), in place, and calls
// `visit` for each live block. Allocates nothing and makes no call: safe while threads are
// stopped.
PoolRead read_pool(uintptr_t pool, size_t pool_bytes, BlockVisitor visit, void *context) noexcept;

// The pools of the arena mapped at [begin, end): the pool_bytes-aligned ones inside it (an
// arena that is not so aligned loses its first).
inline uintptr_t first_pool(uintptr_t begin, size_t pool_bytes) noexcept {
  return (begin + pool_bytes - 1) & ~(static_cast<uintptr_t>(pool_bytes) - 1);
}

// The blocks a pool's header says are in use, as an upper bound (its count field, clamped to
// what the pool can hold), from the header's first four bytes alone: what sizing reads.
size_t live_block_bound(uint32_t count_field, size_t pool_bytes) noexcept;

}  // namespace leaseguard::reachability::pymalloc
