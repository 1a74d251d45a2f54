// Anonymous memory the program maps itself (mmap through the dynamic linker: its own arenas,
// pools and slabs, an interpreter's object arenas). The reachability scan reads each as a
// block, as it reads heap blocks: device memory that only such memory holds is reachable
// through it, and what a mapping nothing points to holds is lost with it. glibc's own
// mappings (its malloc's, thread stacks) are made inside glibc and never pass here; those the
// drivers and leaseguard make are recorded with their caller and left out by the scan.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard::interpose::mappings {

struct Mapping {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  uintptr_t caller = 0;  // the return address of the call that made it
};

// Calls visit(context, mapping) for every recorded mapping. Only while every other thread is
// stopped (a thread inside mmap or munmap defers its stop to the call's end): no lock.
void for_each(void (*visit)(void *context, const Mapping &mapping), void *context) noexcept;

// The same while other threads run: under the table's lock, inside a tracked call (a world
// stop waits for its end). `visit` must not map or unmap memory. Nothing if nested in another
// tracked call (from a signal handler).
void for_each_locked(void (*visit)(void *context, const Mapping &mapping), void *context) noexcept;

// The recorded mapping that holds `address`, if any; locked as for_each_locked is.
bool find(uintptr_t address, Mapping &found) noexcept;

// How many are recorded now (a relaxed read, for sizing).
size_t count() noexcept;

// False if some mapping may be missing: the table was full, a call was made from a signal
// handler inside another, or a fork found the table locked.
bool complete() noexcept;

}  // namespace leaseguard::interpose::mappings
