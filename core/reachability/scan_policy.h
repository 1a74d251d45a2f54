// The reachability scan's policy, apart from its mechanisms (interpose/scan) and from the
// classifier (reachability.h): how much memory a classification may take, how much room it
// makes for what appears while the program's threads are stopped, and which of the classes
// found a report may state, given what the scan could not read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reachability.h"

namespace leaseguard::reachability {

// The nodes to make room for: the heap blocks and program mappings recorded now, with a
// sixteenth more blocks and 16,384 more nodes for what other threads make until they stop
// (past that, the heap reads incomplete), and the live device allocations.
size_t node_room_for(size_t heap_blocks, size_t program_mappings, size_t live_allocations) noexcept;

// What a classification of `node_room` nodes makes resident: the nodes and the classifier's
// arrays (faulted in before the stop), `device_bytes` of device copies, and 4 MiB for the
// rest of its arena (maps text, roots, registers, copies of running stacks, the runs of
// present pages: 2 MiB of them at 1.3 million nodes; the most there is room for is 16 MiB).
size_t resident_bytes_for(size_t node_room, uint64_t device_bytes) noexcept;

// Whether a classification that makes `needed` bytes resident may run in a process that may
// make `headroom` more resident (memory_headroom.h): at most half of it, so a program near
// its memory limit is never killed by its leak checker, and keeps room to run on.
bool fits_in_headroom(size_t needed, uint64_t headroom) noexcept;

// What the scan could not see, from the journal's kReachability* flags: where a thread could
// not be stopped, the host heap was not all tracked, a Python interpreter's objects could not
// be read, or a page swapped out was not read, something may hold what was not found reachable.
bool lost_is_unchecked(uint32_t flags) noexcept;

// The class a report states for an allocation the classifier found `found`: never lost on a
// guess (lost_is_unchecked), reachable as found.
Class reported_class(Class found, uint32_t flags) noexcept;

}  // namespace leaseguard::reachability
