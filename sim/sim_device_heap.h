// The simulated device's address space: where its memory lies in the process, as a device's
// lies in the range its driver reserves. Never the host heap, nor a range the kernel may give
// the program's own mappings once freed: on a device an allocation's address is never one the
// host's malloc or mmap hands out, and a leak checker may rely on that. A driver keeps the
// addresses of allocations freed since (a list's slots past its count); were they the
// program's addresses now, the block the program made there would read as held by the
// driver's table (docs/how-it-works.md, "What is left out"), and what only that block holds
// as lost.
//
// The space is reserved in large regions, inaccessible until handed out, each region's first
// page never handed out: whatever mapping ends where a region begins (a thread's stack, whose
// top a pointer keeps), no pointer to its end points into device memory. Freed ranges are
// made inaccessible again, their pages given back, and kept for later allocations.
//
// Allocations of up to kLargestBlock bytes are blocks of power-of-two sizes from 256 bytes (as
// aligned as cuMemAlloc's), carved from chunks of that space; freed ones are kept by the
// thread that freed them (a few of each size, without a lock), then per shard (the calling
// thread's, as the driver's own lock is sharded): threads that allocate at once rarely meet
// on a lock.
#pragma once

#include <cstddef>

namespace leaseguard::sim::device_heap {

constexpr size_t kLargestBlock = 64 * 1024;
constexpr size_t kShards = 32;

// A block of at least `bytes` (1 to kLargestBlock), 256-byte aligned, its first `bytes`
// cleared, from shard `shard` (below kShards); nullptr where the space cannot grow.
void *take(size_t bytes, size_t shard);

// Gives back a block that take(bytes, ...) returned, to shard `shard`: any shard may hand
// it out again.
void give_back(void *block, size_t bytes, size_t shard);

// A range of `bytes` (a multiple of the page size), readable, writable and zero, its pages
// committed only as they are written; nullptr where the space cannot grow.
void *take_range(size_t bytes);

// Gives back a range take_range(bytes) returned: inaccessible again, its pages dropped.
void give_back_range(void *range, size_t bytes);

// Makes fork() safe while another thread is inside these calls: every lock of the space is
// taken before the fork and let go in both processes after it. Call before registering any
// fork handler of a lock held around these calls (the driver's): prepare handlers run in the
// reverse order of registration, so this one then runs after that lock is held.
void register_fork_handlers();

}  // namespace leaseguard::sim::device_heap
