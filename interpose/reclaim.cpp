// Gives reclaimed allocations back to the device through the real driver (the contract is
// in core/reclaim_backend.h).
#include "reclaim.h"

#include "driver_queries.h"
#include "hook_table.h"
#include "lg_cuda.h"
#include "hip_reclaim.h"
#include "resource_rules.h"
#include "vmm_mappings.h"

namespace leaseguard::interpose {
namespace {

// The hook that made an allocation with `api`, whose real function locates the driver.
Hook allocating_hook(Api api) {
  int hook = find_hook(api_name(api).data());  // the names are the hooks' own literals
  return hook >= 0 ? static_cast<Hook>(hook) : Hook::cuMemAlloc_v2;
}

// Unmaps what the program left mapped in a reserved range, then frees the range.
CUresult free_reservation(void *anchor, const HandleRecord &record) {
  auto unmap = reinterpret_cast<lg_pfn_cuMemUnmap>(driver_symbol(anchor, "cuMemUnmap"));
  auto free_range = reinterpret_cast<lg_pfn_cuMemAddressFree>(driver_symbol(anchor, "cuMemAddressFree"));
  if (unmap == nullptr || free_range == nullptr) return CUDA_ERROR_NOT_FOUND;
  for (const auto &[base, size] : mappings_within(record.address, record.bytes)) {
    CUresult status = unmap(base, size);
    if (status != CUDA_SUCCESS) return status;
    note_unmapped(base, size);
  }
  return free_range(record.address, record.bytes);
}

template <typename Release, typename Value>
CUresult call(void *function, Value value) {
  auto release = reinterpret_cast<Release>(function);
  return release != nullptr ? release(value) : CUDA_ERROR_NOT_FOUND;
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
    case Api::cuMemCreate:
    case Api::cuMemRetainAllocationHandle:
    case Api::cuMemImportFromShareableHandle:
      return call<lg_pfn_cuMemRelease>(symbol("cuMemRelease"), record.address);
    case Api::cuMemAddressReserve:
      return free_reservation(anchor, record);
    case Api::cuMemPoolCreate:
      return call<lg_pfn_cuMemPoolDestroy>(symbol("cuMemPoolDestroy"), reinterpret_cast<CUmemoryPool>(record.address));
    case Api::cuArrayCreate:
    case Api::cuArrayCreate_v2:
    case Api::cuArray3DCreate:
    case Api::cuArray3DCreate_v2:
      return call<lg_pfn_cuArrayDestroy>(symbol("cuArrayDestroy"), reinterpret_cast<CUarray>(record.address));
    case Api::cuMipmappedArrayCreate:
      return call<lg_pfn_cuMipmappedArrayDestroy>(symbol("cuMipmappedArrayDestroy"),
                                                  reinterpret_cast<CUmipmappedArray>(record.address));
    case Api::cuIpcOpenMemHandle:
    case Api::cuIpcOpenMemHandle_v2:
      return call<lg_pfn_cuIpcCloseMemHandle>(symbol("cuIpcCloseMemHandle"), record.address);
    case Api::cuMemHostRegister:
    case Api::cuMemHostRegister_v2:
      return call<lg_pfn_cuMemHostUnregister>(symbol("cuMemHostUnregister"), reinterpret_cast<void *>(record.address));
    case Api::cuImportExternalMemory:
      return call<lg_pfn_cuDestroyExternalMemory>(symbol("cuDestroyExternalMemory"),
                                                  reinterpret_cast<CUexternalMemory>(record.address));
    default: {  // device memory, including buffers mapped from external memory
      auto release = reinterpret_cast<lg_pfn_cuMemFree_v2>(symbol("cuMemFree_v2"));
      return release ? release(record.address) : CUDA_ERROR_NOT_FOUND;
    }
  }
}

}  // namespace

int DriverReclaimBackend::release(const HandleRecord &record) noexcept {
  void *anchor = real_function(allocating_hook(record.api));
  if (anchor == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (is_hip(record.api)) return release_hip(anchor, record);
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
