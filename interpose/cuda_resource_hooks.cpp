// The preload's definitions of the CUDA driver's other allocation families: virtual memory
// management, pools, arrays, IPC mappings, host registrations and external memory.
//
// The rules are cuda_hooks.cpp's: forward with the caller's arguments, return the driver's
// status unchanged, record after a successful create (reading an out-parameter or a
// descriptor only then, and only if non-NULL), take the record out before a destroy. What
// each value is and which call releases it is in core/resource_rules.cpp.
#include "hook_support.h"
#include "lg_array_bytes.h"
#include "vmm_mappings.h"

using leaseguard::Api;
using leaseguard::Kind;
using leaseguard::Tracker;
using namespace leaseguard::interpose;

namespace {

// Where memory described by `location` lives: a device ordinal, or -1 for host memory. A
// host location's id is a NUMA node (or garbage the program never set), never a device.
int32_t device_of(const CUmemLocation &location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : -1;
}

// The size of the allocation holding `address`, asked of the driver; 0 if it cannot say.
uint64_t allocation_size(void *anchor, CUdeviceptr address) {
  auto range = reinterpret_cast<lg_pfn_cuMemGetAddressRange_v2>(driver_symbol(anchor, "cuMemGetAddressRange_v2"));
  CUdeviceptr base = 0;
  size_t size = 0;
  return range != nullptr && range(&base, &size, address) == CUDA_SUCCESS ? size : 0;
}

// Bytes still allocated from `pool`, asked of the driver; 0 if it cannot say.
uint64_t pool_bytes_in_use(void *anchor, CUmemoryPool pool) {
  auto attribute = reinterpret_cast<lg_pfn_cuMemPoolGetAttribute>(driver_symbol(anchor, "cuMemPoolGetAttribute"));
  cuuint64_t used = 0;
  return attribute != nullptr && attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS ? used : 0;
}

void *anchor_of(const void *real_fn) { return const_cast<void *>(real_fn); }

}  // namespace

// Frees a value before forwarding; a late free of what leaseguard reclaimed succeeds here.
#define LG_RELEASE_HOOK(name, param_type, param)                                              \
  LG_EXPORT CUresult name(param_type param) {                                                  \
    LG_HOOK_PROLOGUE(name);                                                                    \
    if (tracker != nullptr && value_of(param) != 0 && already_reclaimed(tracker, Api::name, value_of(param))) \
      return CUDA_SUCCESS;                                                                     \
    return real_fn(param);                                                                     \
  }

// --- Virtual memory management --------------------------------------------------------------

LG_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags) {
  LG_HOOK_PROLOGUE(cuMemCreate);
  CUresult status = real_fn(handle, size, prop, flags);
  if (tracker != nullptr && status == CUDA_SUCCESS && handle != nullptr)
    record_alloc(tracker, Api::cuMemCreate, Kind::Vmm, *handle, size, anchor_of(reinterpret_cast<void *>(real_fn)),
                 prop != nullptr ? device_of(prop->location) : -1);
  return status;
}

LG_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  LG_HOOK_PROLOGUE(cuMemRelease);
  if (tracker != nullptr && handle != 0 && already_reclaimed(tracker, Api::cuMemRelease, handle)) return CUDA_SUCCESS;
  return real_fn(handle);
}

// A retained or imported handle is a reference of its own that needs its own cuMemRelease;
// it adds no memory, so it is recorded with 0 bytes.
LG_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  LG_HOOK_PROLOGUE(cuMemRetainAllocationHandle);
  CUresult status = real_fn(handle, addr);
  if (tracker != nullptr && status == CUDA_SUCCESS && handle != nullptr)
    record_alloc(tracker, Api::cuMemRetainAllocationHandle, Kind::Vmm, *handle, 0,
                 anchor_of(reinterpret_cast<void *>(real_fn)), -1);
  return status;
}

LG_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType) {
  LG_HOOK_PROLOGUE(cuMemImportFromShareableHandle);
  CUresult status = real_fn(handle, osHandle, shHandleType);
  if (tracker != nullptr && status == CUDA_SUCCESS && handle != nullptr)
    record_alloc(tracker, Api::cuMemImportFromShareableHandle, Kind::Vmm, *handle, 0,
                 anchor_of(reinterpret_cast<void *>(real_fn)), -1);
  return status;
}

LG_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags) {
  LG_HOOK_PROLOGUE(cuMemAddressReserve);
  CUresult status = real_fn(ptr, size, alignment, addr, flags);
  if (tracker != nullptr && status == CUDA_SUCCESS && ptr != nullptr)
    record_alloc(tracker, Api::cuMemAddressReserve, Kind::Vmm, *ptr, size, anchor_of(reinterpret_cast<void *>(real_fn)),
                 -1);
  return status;
}

LG_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  LG_HOOK_PROLOGUE(cuMemAddressFree);
  if (tracker != nullptr && ptr != 0 && already_reclaimed(tracker, Api::cuMemAddressFree, ptr)) return CUDA_SUCCESS;
  return real_fn(ptr, size);
}

// Mappings are not leaks of their own (a leaked physical handle or range is), but reclaiming
// a range must unmap what is still mapped in it.
LG_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  LG_HOOK_PROLOGUE(cuMemMap);
  CUresult status = real_fn(ptr, size, offset, handle, flags);
  if (tracker != nullptr && status == CUDA_SUCCESS) note_mapped(ptr, size);
  return status;
}

LG_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  LG_HOOK_PROLOGUE(cuMemUnmap);
  CUresult status = real_fn(ptr, size);
  if (tracker != nullptr && status == CUDA_SUCCESS) note_unmapped(ptr, size);
  return status;
}

// --- Pools -----------------------------------------------------------------------------------

LG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  LG_HOOK_PROLOGUE(cuMemPoolCreate);
  CUresult status = real_fn(pool, poolProps);
  if (tracker != nullptr && status == CUDA_SUCCESS && pool != nullptr)
    record_alloc(tracker, Api::cuMemPoolCreate, Kind::Pool, value_of(*pool), 0,
                 anchor_of(reinterpret_cast<void *>(real_fn)), poolProps != nullptr ? device_of(poolProps->location) : -1);
  return status;
}

// The driver destroys a pool with allocations outstanding at once for the program and
// releases it when they are freed; the report says it happened.
LG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  LG_HOOK_PROLOGUE(cuMemPoolDestroy);
  if (tracker == nullptr || pool == nullptr) return real_fn(pool);
  if (already_reclaimed(tracker, Api::cuMemPoolDestroy, value_of(pool))) return CUDA_SUCCESS;
  uint64_t outstanding = 0;
  {
    ErrnoKeeper keep;
    outstanding = pool_bytes_in_use(anchor_of(reinterpret_cast<void *>(real_fn)), pool);
  }
  CUresult status = real_fn(pool);
  if (status == CUDA_SUCCESS && outstanding != 0) {
    ErrnoKeeper keep;
    tracker->on_pool_destroyed_in_use(value_of(pool), outstanding);
  }
  return status;
}

// --- Arrays ----------------------------------------------------------------------------------

#define LG_ARRAY_CREATE_HOOK(name, descriptor, depth_of, flags_of)                                            \
  LG_EXPORT CUresult name(CUarray *pHandle, const descriptor *pAllocateArray) {                              \
    LG_HOOK_PROLOGUE(name);                                                                                   \
    CUresult status = real_fn(pHandle, pAllocateArray);                                                       \
    if (tracker != nullptr && status == CUDA_SUCCESS && pHandle != nullptr) {                                 \
      uint64_t bytes = 0;                                                                                     \
      if (const descriptor *d = pAllocateArray)                                                               \
        bytes = lg_array_bytes(d->Width, d->Height, depth_of, d->Format, d->NumChannels, flags_of, 1);        \
      record_alloc(tracker, Api::name, Kind::Array, value_of(*pHandle), bytes, anchor_of(reinterpret_cast<void *>(real_fn))); \
    }                                                                                                         \
    return status;                                                                                            \
  }
LG_ARRAY_CREATE_HOOK(cuArrayCreate, CUDA_ARRAY_DESCRIPTOR_v1, 0, 0)
LG_ARRAY_CREATE_HOOK(cuArrayCreate_v2, CUDA_ARRAY_DESCRIPTOR, 0, 0)
LG_ARRAY_CREATE_HOOK(cuArray3DCreate, CUDA_ARRAY3D_DESCRIPTOR_v1, d->Depth, d->Flags)
LG_ARRAY_CREATE_HOOK(cuArray3DCreate_v2, CUDA_ARRAY3D_DESCRIPTOR, d->Depth, d->Flags)

LG_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                          unsigned int numMipmapLevels) {
  LG_HOOK_PROLOGUE(cuMipmappedArrayCreate);
  CUresult status = real_fn(pHandle, desc, numMipmapLevels);
  if (tracker != nullptr && status == CUDA_SUCCESS && pHandle != nullptr) {
    uint64_t bytes = desc != nullptr ? lg_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format,
                                                      desc->NumChannels, desc->Flags, numMipmapLevels)
                                     : 0;
    record_alloc(tracker, Api::cuMipmappedArrayCreate, Kind::Array, value_of(*pHandle), bytes,
                 anchor_of(reinterpret_cast<void *>(real_fn)));
  }
  return status;
}

LG_RELEASE_HOOK(cuArrayDestroy, CUarray, hArray)
LG_RELEASE_HOOK(cuMipmappedArrayDestroy, CUmipmappedArray, hMipmappedArray)

// --- IPC -------------------------------------------------------------------------------------

#define LG_IPC_OPEN_HOOK(name)                                                                   \
  LG_EXPORT CUresult name(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {        \
    LG_HOOK_PROLOGUE(name);                                                                       \
    CUresult status = real_fn(pdptr, handle, Flags);                                              \
    if (tracker != nullptr && status == CUDA_SUCCESS && pdptr != nullptr) {                       \
      void *anchor = anchor_of(reinterpret_cast<void *>(real_fn));                                \
      uint64_t bytes = 0;                                                                         \
      {                                                                                           \
        ErrnoKeeper keep;                                                                         \
        bytes = allocation_size(anchor, *pdptr);                                                  \
      }                                                                                           \
      record_alloc(tracker, Api::name, Kind::Ipc, *pdptr, bytes, anchor);                         \
    }                                                                                             \
    return status;                                                                                \
  }
LG_IPC_OPEN_HOOK(cuIpcOpenMemHandle)
LG_IPC_OPEN_HOOK(cuIpcOpenMemHandle_v2)
LG_RELEASE_HOOK(cuIpcCloseMemHandle, CUdeviceptr, dptr)

// --- Host registration -----------------------------------------------------------------------

#define LG_HOST_REGISTER_HOOK(name)                                                                   \
  LG_EXPORT CUresult name(void *p, size_t bytesize, unsigned int Flags) {                             \
    LG_HOOK_PROLOGUE(name);                                                                            \
    CUresult status = real_fn(p, bytesize, Flags);                                                     \
    if (tracker != nullptr && status == CUDA_SUCCESS && p != nullptr)                                  \
      record_alloc(tracker, Api::name, Kind::Registered, value_of(p), bytesize, anchor_of(reinterpret_cast<void *>(real_fn))); \
    return status;                                                                                     \
  }
LG_HOST_REGISTER_HOOK(cuMemHostRegister)
LG_HOST_REGISTER_HOOK(cuMemHostRegister_v2)
LG_RELEASE_HOOK(cuMemHostUnregister, void *, p)

// --- External memory -------------------------------------------------------------------------

LG_EXPORT CUresult cuImportExternalMemory(CUexternalMemory *extMem_out,
                                          const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *memHandleDesc) {
  LG_HOOK_PROLOGUE(cuImportExternalMemory);
  CUresult status = real_fn(extMem_out, memHandleDesc);
  if (tracker != nullptr && status == CUDA_SUCCESS && extMem_out != nullptr)
    record_alloc(tracker, Api::cuImportExternalMemory, Kind::External, value_of(*extMem_out),
                 memHandleDesc != nullptr ? memHandleDesc->size : 0, anchor_of(reinterpret_cast<void *>(real_fn)));
  return status;
}

// A buffer mapped from an imported object is freed with cuMemFree, not with the object.
LG_EXPORT CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr *devPtr, CUexternalMemory extMem,
                                                   const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *bufferDesc) {
  LG_HOOK_PROLOGUE(cuExternalMemoryGetMappedBuffer);
  CUresult status = real_fn(devPtr, extMem, bufferDesc);
  if (tracker != nullptr && status == CUDA_SUCCESS && devPtr != nullptr)
    record_alloc(tracker, Api::cuExternalMemoryGetMappedBuffer, Kind::External, *devPtr,
                 bufferDesc != nullptr ? bufferDesc->size : 0, anchor_of(reinterpret_cast<void *>(real_fn)));
  return status;
}

LG_RELEASE_HOOK(cuDestroyExternalMemory, CUexternalMemory, extMem)
