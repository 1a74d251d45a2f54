// The simulator's long-lived memory, cleared as a C driver's calloc clears its own.
//
// A leak checker reads the driver's host memory: leaseguard's scan does, to tell the
// driver's tables from the program's memory (every block the driver's globals reach is the
// driver's, and the program's pointers never lead through it). Bytes the driver never wrote
// (alignment padding, a vector's room past its size) would otherwise hold what a block the
// program freed held there: stale pointers into the program's live heap, which would make
// the program's memory read as the driver's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace leaseguard::sim {

// Memory for one of the simulator's long-lived objects (the driver, its contexts, pools and
// call registry), for `new (memory) T`.
template <typename T>
void *cleared_memory_for() {
  void *memory = ::operator new (sizeof(T), std::align_val_t{alignof(T)});
  std::memset(memory, 0, sizeof(T));
  return memory;
}

// The allocator of the simulator's long-lived containers.
template <typename T>
struct ClearedAllocator {
  using value_type = T;
  ClearedAllocator() = default;
  template <typename U>
  ClearedAllocator(const ClearedAllocator<U> &) noexcept {}
  T *allocate(size_t count) {
    T *memory = std::allocator<T>().allocate(count);
    std::fill(reinterpret_cast<unsigned char *>(memory), reinterpret_cast<unsigned char *>(memory + count), 0);
    return memory;
  }
  void deallocate(T *memory, size_t count) noexcept { std::allocator<T>().deallocate(memory, count); }
  template <typename U>
  bool operator==(const ClearedAllocator<U> &) const noexcept {
    return true;
  }
};
template <typename T>
using ClearedVector = std::vector<T, ClearedAllocator<T>>;

}  // namespace leaseguard::sim
