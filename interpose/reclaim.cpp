// Gives reclaimed allocations back to the device through the real driver (the contract is
// in core/reclaim_backend.h).
#include "reclaim.h"

#include "driver_queries.h"
#include "hook_table.h"
#include "lg_cuda.h"

namespace leaseguard::interpose {
namespace {

// The hook that made an allocation with `api`, whose real function locates the driver.
Hook allocating_hook(Api api) {
  switch (api) {
    case Api::cuMemAlloc: return Hook::cuMemAlloc;
    case Api::cuMemAllocPitch: return Hook::cuMemAllocPitch;
    case Api::cuMemAllocPitch_v2: return Hook::cuMemAllocPitch_v2;
    case Api::cuMemAllocManaged: return Hook::cuMemAllocManaged;
    case Api::cuMemAllocHost: return Hook::cuMemAllocHost;
    case Api::cuMemAllocHost_v2: return Hook::cuMemAllocHost_v2;
    case Api::cuMemHostAlloc: return Hook::cuMemHostAlloc;
    case Api::cuMemAllocAsync: return Hook::cuMemAllocAsync;
    case Api::cuMemAllocAsync_ptsz: return Hook::cuMemAllocAsync_ptsz;
    case Api::cuMemAllocFromPoolAsync: return Hook::cuMemAllocFromPoolAsync;
    case Api::cuMemAllocFromPoolAsync_ptsz: return Hook::cuMemAllocFromPoolAsync_ptsz;
    default: return Hook::cuMemAlloc_v2;
  }
}

CUresult free_with_matching_entry_point(void *anchor, const HandleRecord &record) {
  auto symbol = [&](const char *name) { return driver_symbol(anchor, name); };
  switch (record.api) {
    case Api::cuMemAlloc:
    case Api::cuMemAllocPitch: {
      auto release = reinterpret_cast<lg_pfn_cuMemFree>(symbol("cuMemFree"));
      return release ? release(static_cast<CUdeviceptr_v1>(record.address)) : CUDA_ERROR_NOT_FOUND;
    }
    case Api::cuMemAllocHost:
    case Api::cuMemAllocHost_v2:
    case Api::cuMemHostAlloc: {
      auto release = reinterpret_cast<lg_pfn_cuMemFreeHost>(symbol("cuMemFreeHost"));
      return release ? release(reinterpret_cast<void *>(record.address)) : CUDA_ERROR_NOT_FOUND;
    }
    case Api::cuMemAllocAsync:
    case Api::cuMemAllocFromPoolAsync:
    case Api::cuMemAllocAsync_ptsz:
    case Api::cuMemAllocFromPoolAsync_ptsz: {
      // Stream-ordered memory is freed on the stream the same generation uses for the
      // default stream, and synchronized, so it is back in its pool when the lease is over.
      const bool per_thread = record.api == Api::cuMemAllocAsync_ptsz || record.api == Api::cuMemAllocFromPoolAsync_ptsz;
      auto release = reinterpret_cast<lg_pfn_cuMemFreeAsync>(symbol(per_thread ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync"));
      auto synchronize =
          reinterpret_cast<lg_pfn_cuStreamSynchronize>(symbol(per_thread ? "cuStreamSynchronize_ptsz" : "cuStreamSynchronize"));
      if (release == nullptr || synchronize == nullptr) return CUDA_ERROR_NOT_FOUND;
      CUresult status = release(record.address, nullptr);
      return status == CUDA_SUCCESS ? synchronize(nullptr) : status;
    }
    default: {
      auto release = reinterpret_cast<lg_pfn_cuMemFree_v2>(symbol("cuMemFree_v2"));
      return release ? release(record.address) : CUDA_ERROR_NOT_FOUND;
    }
  }
}

}  // namespace

int DriverReclaimBackend::release(const HandleRecord &record) noexcept {
  void *anchor = real_function(allocating_hook(record.api));
  if (anchor == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // The allocation's context current for the call (the watchdog thread has none), and the
  // caller's restored afterwards.
  auto push = reinterpret_cast<lg_pfn_cuCtxPushCurrent_v2>(driver_symbol(anchor, "cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<lg_pfn_cuCtxPopCurrent_v2>(driver_symbol(anchor, "cuCtxPopCurrent_v2"));
  bool pushed = record.context != 0 && push != nullptr && pop != nullptr &&
                push(reinterpret_cast<CUcontext>(record.context)) == CUDA_SUCCESS;
  CUresult status = free_with_matching_entry_point(anchor, record);
  if (pushed) {
    CUcontext ignored = nullptr;
    pop(&ignored);
  }
  return static_cast<int>(status);
}

}  // namespace leaseguard::interpose
