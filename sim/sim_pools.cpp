// Memory pools of the simulated driver.
//
// As on the driver: every device has a default pool that cannot be destroyed; a pool the
// program created and destroys while allocations from it are outstanding is destroyed at
// once for the program (no new allocations from it), and its memory goes back when the last
// of those allocations is freed — they stay valid until then.
#include <algorithm>

#include "sim_device.h"

namespace leaseguard::sim {

SimPool *SimDriver::default_pool(int device) {
  if (device < 0 || device >= device_count_) return nullptr;
  return default_pools_[static_cast<size_t>(device)];
}

SimPool *SimDriver::usable_pool_locked(CUmemoryPool pool) const {
  auto *candidate = reinterpret_cast<SimPool *>(pool);
  if (candidate == nullptr || std::find(pools_.begin(), pools_.end(), candidate) == pools_.end()) return nullptr;
  return candidate->destroyed ? nullptr : candidate;
}

SimPool *SimDriver::allocating_pool_locked(CUcontext ctx, SimPool *named) const {
  if (named != nullptr) return usable_pool_locked(reinterpret_cast<CUmemoryPool>(named));
  return default_pools_[static_cast<size_t>(reinterpret_cast<SimContext *>(ctx)->device)];
}

CUresult SimDriver::create_pool(const CUmemPoolProps *props, CUmemoryPool *out) {
  if (props == nullptr || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (props->location.id < 0 || props->location.id >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
  auto *pool = new (cleared_memory_for<SimPool>()) SimPool;  // never deleted: a stale handle stays recognisable
  pool->device = props->location.id;
  pools_.push_back(pool);
  *out = reinterpret_cast<CUmemoryPool>(pool);
  return CUDA_SUCCESS;
}

CUresult SimDriver::destroy_pool(CUmemoryPool handle) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  SimPool *pool = usable_pool_locked(handle);
  if (pool == nullptr || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  pool->destroyed = true;  // outstanding allocations keep it alive until they are freed
  return CUDA_SUCCESS;
}

CUresult SimDriver::trim_pool(CUmemoryPool handle) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  return usable_pool_locked(handle) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult SimDriver::pool_attribute(CUmemoryPool handle, CUmemPool_attribute attribute, void *value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  SimPool *pool = usable_pool_locked(handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto *out = static_cast<cuuint64_t *>(value);
  const size_t used = pool->used_locked();
  pool->used_high = std::max(pool->used_high, used);
  switch (attribute) {
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *out = used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *out = pool->used_high; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *out = 0; return CUDA_SUCCESS;
    default: *static_cast<int *>(value) = 1; return CUDA_SUCCESS;  // the reuse flags
  }
}

}  // namespace leaseguard::sim
