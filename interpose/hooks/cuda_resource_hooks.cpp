// The preload's definitions of the CUDA driver's other allocation families: virtual memory
// management, pools, arrays, IPC mappings, host registrations and external memory; and where
// modules keep their global variables (device_globals.h).
//
// Each hook passes its arguments to the template for its shape (hook_support.h), reading a
// descriptor or a property only after the driver succeeded, and only if non-NULL. What
// each value is and which call releases it is in the table (core/base/entry_points.h).
#include "device_globals.h"
#include "hook_support.h"
#include "lg_array_bytes.h"
#include "vmm_mappings.h"

using leaseguard::Api;
using namespace leaseguard::interpose;

namespace {

// Where memory described by `location` lives: a device ordinal, or -1 for host memory. A
// host location's id is a NUMA node (or garbage the program never set), never a device.
int32_t device_of(const CUmemLocation &location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : -1;
}

// The size of the allocation holding `address`, asked of the driver; 0 if it cannot say.
uint64_t allocation_size(void *anchor, CUdeviceptr address) {
  ErrnoKeeper keep;
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

// An array: its bytes from its descriptor (the 2D descriptors have no depth or flags).
template <typename Descriptor>
uint64_t array_bytes(const Descriptor *d, unsigned levels = 1) {
  if (d == nullptr) return 0;
  if constexpr (requires { d->Depth; })
    return lg_array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags, levels);
  else return lg_array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels, 0, levels);
}

template <Api A, typename Descriptor>
LG_ALWAYS_INLINE CUresult array_create(CUarray *pHandle, const Descriptor *pAllocateArray) {
  return allocating_call<A>(
      [&] { return pHandle != nullptr ? made(value_of(*pHandle), array_bytes(pAllocateArray)) : Made{}; }, pHandle,
      pAllocateArray);
}

// An IPC mapping: its size is the allocation's, asked of the driver.
template <Api A>
LG_ALWAYS_INLINE CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  const auto anchor = reinterpret_cast<void *>(real<A>());
  return allocating_call<A>([&] { return pdptr != nullptr ? made(*pdptr, allocation_size(anchor, *pdptr)) : Made{}; },
                            pdptr, handle, Flags);
}

// A registration: the value is the program's own buffer, an argument.
template <Api A>
LG_ALWAYS_INLINE CUresult host_register(void *p, size_t bytesize, unsigned int Flags) {
  return allocating_call<A>([&] { return p != nullptr ? made(value_of(p), bytesize) : Made{}; }, p, bytesize, Flags);
}

}  // namespace

// --- Virtual memory management -----------------------------------------------------------------

LG_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags) {
  return allocating_call<Api::cuMemCreate>(
      [&] {
        return handle != nullptr ? made(*handle, size, prop != nullptr ? device_of(prop->location) : -1) : Made{};
      },
      handle, size, prop, flags);
}

LG_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return release<Api::cuMemRelease>(handle); }

// A retained or imported handle is a reference of its own that needs its own release; it
// adds no memory, so it is recorded with 0 bytes.
LG_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  return allocating_call<Api::cuMemRetainAllocationHandle>(
      [&] { return handle != nullptr ? made(*handle, 0, -1) : Made{}; }, handle, addr);
}

LG_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType) {
  return allocating_call<Api::cuMemImportFromShareableHandle>(
      [&] { return handle != nullptr ? made(*handle, 0, -1) : Made{}; }, handle, osHandle, shHandleType);
}

LG_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags) {
  return allocating_call<Api::cuMemAddressReserve>([&] { return ptr != nullptr ? made(*ptr, size, -1) : Made{}; }, ptr,
                                                   size, alignment, addr, flags);
}

LG_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) { return release<Api::cuMemAddressFree>(ptr, size); }

// Mappings are not leaks of their own (a leaked physical handle or range is), but reclaiming
// a range must unmap what is still mapped in it.
LG_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  return call_then<Api::cuMemMap>([&] { note_mapped(ptr, size); }, ptr, size, offset, handle, flags);
}

LG_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return call_then<Api::cuMemUnmap>([&] { note_unmapped(ptr, size); }, ptr, size);
}

// --- Pools -----------------------------------------------------------------------------------

LG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  return allocating_call<Api::cuMemPoolCreate>(
      [&] {
        return pool != nullptr ? made(value_of(*pool), 0, poolProps != nullptr ? device_of(poolProps->location) : -1)
                               : Made{};
      },
      pool, poolProps);
}

LG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return pool_release<Api::cuMemPoolDestroy>(
      pool, [](void *anchor, CUmemoryPool in_use_of) { return pool_bytes_in_use(anchor, in_use_of); });
}

// --- Arrays ----------------------------------------------------------------------------------

LG_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray) {
  return array_create<Api::cuArrayCreate>(pHandle, pAllocateArray);
}
LG_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  return array_create<Api::cuArrayCreate_v2>(pHandle, pAllocateArray);
}
LG_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray) {
  return array_create<Api::cuArray3DCreate>(pHandle, pAllocateArray);
}
LG_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  return array_create<Api::cuArray3DCreate_v2>(pHandle, pAllocateArray);
}

LG_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                          unsigned int numMipmapLevels) {
  return allocating_call<Api::cuMipmappedArrayCreate>(
      [&] { return pHandle != nullptr ? made(value_of(*pHandle), array_bytes(desc, numMipmapLevels)) : Made{}; },
      pHandle, desc, numMipmapLevels);
}

LG_EXPORT CUresult cuArrayDestroy(CUarray hArray) { return release<Api::cuArrayDestroy>(hArray); }
LG_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return release<Api::cuMipmappedArrayDestroy>(hMipmappedArray);
}

// --- IPC -------------------------------------------------------------------------------------

LG_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return ipc_open<Api::cuIpcOpenMemHandle>(pdptr, handle, Flags);
}
LG_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return ipc_open<Api::cuIpcOpenMemHandle_v2>(pdptr, handle, Flags);
}
LG_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) { return release<Api::cuIpcCloseMemHandle>(dptr); }

// --- Host registration -----------------------------------------------------------------------

LG_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  return host_register<Api::cuMemHostRegister>(p, bytesize, Flags);
}
LG_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
  return host_register<Api::cuMemHostRegister_v2>(p, bytesize, Flags);
}
LG_EXPORT CUresult cuMemHostUnregister(void *p) { return release<Api::cuMemHostUnregister>(p); }

// --- External memory -------------------------------------------------------------------------

LG_EXPORT CUresult cuImportExternalMemory(CUexternalMemory *extMem_out,
                                          const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *memHandleDesc) {
  return allocating_call<Api::cuImportExternalMemory>(
      [&] {
        return extMem_out != nullptr ? made(value_of(*extMem_out), memHandleDesc != nullptr ? memHandleDesc->size : 0)
                                     : Made{};
      },
      extMem_out, memHandleDesc);
}

LG_EXPORT CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr *devPtr, CUexternalMemory extMem,
                                                   const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *bufferDesc) {
  return allocating_call<Api::cuExternalMemoryGetMappedBuffer>(
      [&] { return devPtr != nullptr ? made(*devPtr, bufferDesc != nullptr ? bufferDesc->size : 0) : Made{}; }, devPtr,
      extMem, bufferDesc);
}

LG_EXPORT CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  return release<Api::cuDestroyExternalMemory>(extMem);
}

// --- Modules' global variables ---------------------------------------------------------------

namespace {

// Where a module's global variable lives, kept for the reachability scan (device_globals.h).
// Either out-parameter may be NULL: the driver is then handed a place of leaseguard's own, so
// the variable's address and size are both known; the caller's are passed as they are.
template <Api A, typename Owner>
LG_ALWAYS_INLINE CUresult global_lookup(CUdeviceptr *dptr, size_t *bytes, Owner owner, const char *name) {
  CUdeviceptr own_address = 0;
  size_t own_size = 0;
  CUdeviceptr *address = dptr != nullptr ? dptr : &own_address;
  size_t *size = bytes != nullptr ? bytes : &own_size;
  return call_then<A>([&] { note_device_global(A, value_of(owner), *address, *size); }, address, size, owner, name);
}

// Forgotten before the driver unloads: a classification must never read what it freed.
template <Api A, typename Owner>
LG_ALWAYS_INLINE CUresult code_unload(Owner owner) {
  forget_device_globals_of(value_of(owner));
  return call_then<A>([] {}, owner);
}

}  // namespace

LG_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
  return global_lookup<Api::cuModuleGetGlobal_v2>(dptr, bytes, hmod, name);
}
LG_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
  return global_lookup<Api::cuLibraryGetGlobal>(dptr, bytes, library, name);
}
LG_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
  return global_lookup<Api::cuLibraryGetManaged>(dptr, bytes, library, name);
}
LG_EXPORT CUresult cuModuleUnload(CUmodule hmod) { return code_unload<Api::cuModuleUnload>(hmod); }
LG_EXPORT CUresult cuLibraryUnload(CUlibrary library) { return code_unload<Api::cuLibraryUnload>(library); }
