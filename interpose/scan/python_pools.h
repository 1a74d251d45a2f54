// The arenas of Python's small-object allocator in this process, found in the table of the
// program's mappings (program_mappings.h) by the module that made them, and read block by
// block (core/reachability/pymalloc_pools.h): how the scan reads a Python program's objects where they are
// not blocks of the tracked heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pymalloc_pools.h"
#include "stack_capture.h"

namespace leaseguard::interpose::python_pools {

// Where a module lies (ModuleMap::module_range: its first to its last loaded segment); the
// arenas are those its code mapped.
using Extent = CodeRange;

// The module that holds `inside` (ModuleMap::module_range); empty where none does or it cannot
// be looked up. Takes the loader's lock: never while threads are stopped.
Extent module_of(const void *inside) noexcept;

// Whether `address` lies in a block in use of an arena that `module`'s code mapped. Reads the
// pool in place: only where nothing can change or unmap it (under the interpreter's lock).
bool in_live_block(const Extent &module, uintptr_t address) noexcept;

// At most how many blocks the arenas that `module`'s code mapped have in use, read while other
// threads run: for sizing what the stopped phase needs. An arena unmapped meanwhile reads as
// nothing instead of faulting.
size_t live_block_bound(const Extent &module) noexcept;

// Reads the arena mapped at [begin, end) while threads are stopped: `block` for each block in
// use, `whole` for each pool that does not read as pymalloc's (read whole then). Returns false,
// having called neither, where no pool of it reads as pymalloc's: it is not an arena.
bool read_arena(uintptr_t begin, uintptr_t end, reachability::pymalloc::BlockVisitor block,
                reachability::pymalloc::BlockVisitor whole, void *context) noexcept;

}  // namespace leaseguard::interpose::python_pools
