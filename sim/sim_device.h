// The simulated GPU: devices, contexts and device memory kept in host memory.
//
// Semantics follow the CUDA driver where leaseguard depends on them: 256-byte aligned
// addresses, CUDA_ERROR_OUT_OF_MEMORY past a capacity (LEASEGUARD_SIM_CAPACITY, default
// 80 GiB, committed lazily), CUDA_ERROR_INVALID_VALUE for unknown or double frees, and
// context destroy / primary-context reset freeing every allocation of the context except
// stream-ordered (pool) memory. One mutex guards the state: the simulator is a test
// device, and its cost is the same with and without leaseguard in front of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lg_cuda.h"

namespace leaseguard::sim {

enum class MemoryKind { Device, Pitched, Managed, Host, Async, Legacy32 };

struct SimContext {
  int device = 0;
  bool primary = false;
  bool alive = true;
  int primary_refs = 0;
};

struct SimAllocation {
  size_t bytes = 0;        // what the caller asked for
  size_t reserved = 0;     // what was mapped or allocated
  SimContext *context = nullptr;
  MemoryKind kind = MemoryKind::Device;
  bool mapped = false;     // mmap'd (large or 32-bit) rather than heap-allocated
};

class SimDriver {
 public:
  static SimDriver &instance();

  CUresult init();
  bool initialized() const { return initialized_; }
  int device_count() const { return device_count_; }
  size_t capacity() const { return capacity_; }
  size_t used() const;

  CUresult create_context(int device, CUcontext *out);
  CUresult destroy_context(CUcontext ctx);
  CUresult retain_primary(int device, CUcontext *out);
  CUresult release_primary(int device);
  CUresult reset_primary(int device);
  CUresult primary_state(int device, unsigned *flags, int *active);

  // Current-context stack of the calling thread.
  CUresult set_current(CUcontext ctx);
  CUcontext current() const;
  CUresult push_current(CUcontext ctx);
  CUresult pop_current(CUcontext *out);
  CUresult current_device(int *device) const;

  // Allocations need a current, live context (except Async from a pool, which uses the
  // device of the current context too).
  CUresult allocate(size_t bytes, MemoryKind kind, uint64_t *address);
  // Frees an allocation whose kind is one of `allowed`; unknown or mismatched: INVALID_VALUE.
  CUresult release(uint64_t address, std::initializer_list<MemoryKind> allowed);

  // Checks [address, address+bytes) lies inside one live allocation.
  bool range_valid(uint64_t address, size_t bytes) const;

  void *default_pool(int device);

 private:
  SimDriver();
  void free_context_memory_locked(SimContext *ctx);
  void unmap_locked(uint64_t address, const SimAllocation &allocation);
  bool context_valid_locked(CUcontext ctx) const;

  mutable std::mutex mutex_;
  bool initialized_ = false;
  int device_count_ = 1;
  size_t capacity_ = 0;
  size_t used_ = 0;
  std::vector<SimContext *> contexts_;         // never deleted: handles stay comparable
  std::vector<SimContext *> primaries_;        // one per device
  std::vector<char> pools_;                    // one byte per device: a pool handle's identity
  std::unordered_map<uint64_t, SimAllocation> allocations_;
};

}  // namespace leaseguard::sim
