// The program's live host heap blocks, for the reachability scan: the preload's malloc,
// free, calloc, realloc and aligned allocators forward to the next definitions (glibc's, or
// an allocator preloaded after leaseguard) and keep each live block's address and size in a
// sharded table outside the heap (mmap'd), so the scan can tell a pointer into a live block
// from a stale one into freed memory.
//
// Off (LEASEGUARD_REACHABILITY=off) they only forward. Under a sanitizer whose runtime owns
// malloc, the sanitizer's malloc/free hooks feed the same table.
//
// The world stop (world_stop.h) never holds a thread inside one of these calls: a thread
// between the allocator and the table, or inside realloc moving a block's contents, would
// leave a live block unknown. It lets the thread go on to the call's end, where it waits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard::interpose {
class StackJump;
}

namespace leaseguard::interpose::heap {

// True if every block the program allocates is in the table (tracking on, and the
// program's malloc is leaseguard's or a sanitizer's with hooks).
bool complete() noexcept;
size_t live_blocks() noexcept;

// True if a live block in the table starts at `address`.
bool tracks(uintptr_t address) noexcept;

// Marks the live block at `block` as leaseguard's own (interpose/scan/own_memory.cpp): the
// reachability scan follows only such blocks from leaseguard's roots.
void mark_own(const void *block) noexcept;

// Calls visit(context, address, bytes, leaseguard_own) for every live block. Only while every
// other thread is stopped (or in tests): it takes no lock.
void for_each_block(void (*visit)(void *context, uintptr_t address, size_t bytes, bool leaseguard_own),
                    void *context) noexcept;

// Whether this thread is inside a tracked call.
bool in_tracked_call() noexcept;

// Where each thread's depth of tracked calls and its "a stop waits for the call's end" word
// (both int) lie, as offsets from its thread pointer (static TLS: the same for every
// thread). The world stop's tracer reads the first and sets the second in a thread it holds;
// the thread then waits at the call's end (park_after_deferred_stop).
struct CallWords {
  intptr_t depth_offset;
  intptr_t stop_waiting_offset;
};
CallWords call_words() noexcept;

// Whether host memory is tracked for the reachability scan (LEASEGUARD_REACHABILITY not off).
bool tracking() noexcept;

// For other calls that change what the scan reads (program_mappings.h): the world stop waits
// for their end, as for the heap calls. begin_tracked_call returns false for a call nested in
// another (from a signal handler), which must leave the tables alone; end_tracked_call follows
// either way.
bool begin_tracked_call() noexcept;
void end_tracked_call() noexcept;

// The tracked calls a jump out of a signal handler leaves end here (stack_jump.h), and a
// stop deferred to their end is taken now.
void jumping_to(const StackJump &jump) noexcept;

// Called from the preload's constructor: the forked child's repair of the table (a shard
// locked at the fork), and the sanitizer hooks where they apply.
void start() noexcept;

}  // namespace leaseguard::interpose::heap
