// Python's object arenas, found by their maker and read block by block (python_pools.h).
#include "python_pools.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "memory_reader.h"
#include "module_map.h"
#include "program_mappings.h"

namespace leaseguard::interpose::python_pools {
namespace {

namespace pymalloc = reachability::pymalloc;

// The pool of an arena mapping that holds `address`, or 0.
uintptr_t pool_holding(const mappings::Mapping &arena, uintptr_t address, size_t pool_bytes) noexcept {
  const uintptr_t pool = address & ~(static_cast<uintptr_t>(pool_bytes) - 1);
  const bool inside = pool >= pymalloc::first_pool(arena.begin, pool_bytes) && pool + pool_bytes <= arena.end;
  return inside ? pool : 0;
}

}  // namespace

Extent module_of(const void *inside) noexcept {
  try {
    return ModuleMap::module_range(reinterpret_cast<uintptr_t>(inside));
  } catch (...) {
    return {};
  }
}

bool in_live_block(const Extent &module, uintptr_t address) noexcept {
  mappings::Mapping arena;
  if (!mappings::find(address, arena) || !module.contains(arena.caller)) return false;
  const size_t pool_bytes = pymalloc::pool_bytes_for(arena.end - arena.begin);
  const uintptr_t pool = pool_bytes != 0 ? pool_holding(arena, address, pool_bytes) : 0;
  if (pool == 0) return false;
  struct Probe {
    uintptr_t address;
    bool found;
  } probe{address, false};
  const pymalloc::PoolRead read = pymalloc::read_pool(
      pool, pool_bytes,
      [](void *context, uintptr_t block, size_t bytes) {
        auto &sought = *static_cast<Probe *>(context);
        sought.found |= sought.address >= block && sought.address < block + bytes;
      },
      &probe);
  return read == pymalloc::PoolRead::Live && probe.found;
}

size_t live_block_bound(const Extent &module) noexcept {
  struct Count {
    const Extent &module;
    size_t blocks;
  } count{module, 0};
  mappings::for_each_locked(
      [](void *context, const mappings::Mapping &arena) {
        auto &total = *static_cast<Count *>(context);
        const size_t pool_bytes = pymalloc::pool_bytes_for(arena.end - arena.begin);
        if (!total.module.contains(arena.caller) || pool_bytes == 0) return;
        // Each pool's count field, the first four bytes of its header, in one system call.
        uint32_t fields[pymalloc::kPoolsPerArena] = {};
        iovec local[pymalloc::kPoolsPerArena], remote[pymalloc::kPoolsPerArena];
        size_t pools = 0;
        for (uintptr_t pool = pymalloc::first_pool(arena.begin, pool_bytes);
             pool + pool_bytes <= arena.end && pools < pymalloc::kPoolsPerArena; pool += pool_bytes, ++pools) {
          local[pools] = iovec{&fields[pools], sizeof fields[pools]};
          remote[pools] = iovec{reinterpret_cast<void *>(pool), sizeof fields[pools]};
        }
        const size_t got = memory::copy_ranges(local, remote, pools);
        for (size_t i = 0; i < pools && i * sizeof(uint32_t) < got; ++i)
          total.blocks += pymalloc::live_block_bound(fields[i], pool_bytes);
      },
      &count);
  return count.blocks;
}

bool read_arena(uintptr_t begin, uintptr_t end, pymalloc::BlockVisitor block, pymalloc::BlockVisitor whole,
                void *context) noexcept {
  const size_t pool_bytes = pymalloc::pool_bytes_for(end - begin);
  if (pool_bytes == 0) return false;
  const uintptr_t first = pymalloc::first_pool(begin, pool_bytes);
  auto nothing = [](void *, uintptr_t, size_t) {};
  bool recognised = false;
  for (uintptr_t pool = first; pool + pool_bytes <= end && !recognised; pool += pool_bytes) {
    const pymalloc::PoolRead read = pymalloc::read_pool(pool, pool_bytes, nothing, nullptr);
    recognised = read == pymalloc::PoolRead::Live || read == pymalloc::PoolRead::Empty;
  }
  if (!recognised) return false;
  // The part before the first pool (an arena not aligned to pools) is never handed out.
  for (uintptr_t pool = first; pool + pool_bytes <= end; pool += pool_bytes)
    if (pymalloc::read_pool(pool, pool_bytes, block, context) == pymalloc::PoolRead::Unreadable)
      whole(context, pool, pool_bytes);
  return true;
}

}  // namespace leaseguard::interpose::python_pools
