// The preload's definitions of the HIP runtime's memory entry points.
//
// Each hook passes its arguments to the template for its shape (hook_support.h): forward
// with the caller's arguments, return the runtime's status unchanged, record after success
// only what a non-NULL out-parameter holds (hipMalloc of 0 bytes succeeds with NULL:
// nothing is recorded), take a record out before its release. The definitions are
// unversioned (exports.map), so an application's references to hipMalloc@hip_4.2 bind to
// them.
#include "hook_support.h"
#include "lg_array_bytes.h"
#include "lg_hip.h"
#include "vmm_mappings.h"

using leaseguard::Api;
using leaseguard::Tracker;
using namespace leaseguard::interpose;

namespace {

uint64_t times(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

uint64_t channel_bytes(const hipChannelFormatDesc *desc) {
  return desc != nullptr ? lg_channel_element_bytes(desc->x, desc->y, desc->z, desc->w) : 0;
}

int32_t device_of(const hipMemLocation &location) {
  return location.type == hipMemLocationTypeDevice ? location.id : -1;
}

// An allocation whose value the runtime writes to `out`, of `bytes` read after the call.
template <Api A, typename Out, typename Bytes, typename... Args>
LG_ALWAYS_INLINE hipError_t allocation_of(Out *out, Bytes bytes, Args... args) {
  return allocating_call<A>([&] { return out != nullptr && *out != nullptr ? made(value_of(*out), bytes()) : Made{}; },
                            args...);
}

// A handle that adds no memory of its own (a VMM reference): 0 bytes, host-located.
template <Api A, typename... Args>
LG_ALWAYS_INLINE hipError_t reference(hipMemGenericAllocationHandle_t *handle, Args... args) {
  return allocating_call<A>(
      [&] { return handle != nullptr && *handle != nullptr ? made(value_of(*handle), 0, -1) : Made{}; }, handle,
      args...);
}

// Bytes still allocated from `pool`, asked of the runtime; 0 if it cannot say.
uint64_t pool_bytes_in_use(void *anchor, hipMemPool_t pool) {
  auto attribute = reinterpret_cast<lg_pfn_hipMemPoolGetAttribute>(driver_symbol(anchor, "hipMemPoolGetAttribute"));
  uint64_t used = 0;
  return attribute != nullptr && attribute(pool, hipMemPoolAttrUsedMemCurrent, &used) == hipSuccess ? used : 0;
}

// The IPC mapping's size, asked of the runtime; 0 if it cannot say.
uint64_t ipc_bytes(void *anchor, void *address) {
  ErrnoKeeper keep;
  auto range = reinterpret_cast<lg_pfn_hipMemGetAddressRange>(driver_symbol(anchor, "hipMemGetAddressRange"));
  hipDeviceptr_t base = nullptr;
  size_t size = 0;
  return range != nullptr && range(&base, &size, address) == hipSuccess ? size : 0;
}

}  // namespace

// --- Device, managed and pitched memory ---------------------------------------------------------

LG_EXPORT hipError_t hipMalloc(void **ptr, size_t size) { return allocation<Api::hipMalloc>(ptr, size); }
LG_EXPORT hipError_t hipExtMallocWithFlags(void **ptr, size_t size, unsigned int flags) {
  return allocation<Api::hipExtMallocWithFlags>(ptr, size, flags);
}
LG_EXPORT hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags) {
  return allocation<Api::hipMallocManaged>(ptr, size, flags);
}
LG_EXPORT hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height) {
  return allocation_of<Api::hipMallocPitch>(
      ptr, [&] { return pitch != nullptr ? times(*pitch, height) : 0; }, ptr, pitch, width, height);
}
LG_EXPORT hipError_t hipMemAllocPitch(hipDeviceptr_t *dptr, size_t *pitch, size_t widthInBytes, size_t height,
                                      unsigned int elementSizeBytes) {
  return allocation_of<Api::hipMemAllocPitch>(
      dptr, [&] { return pitch != nullptr ? times(*pitch, height) : 0; }, dptr, pitch, widthInBytes, height,
      elementSizeBytes);
}
LG_EXPORT hipError_t hipMalloc3D(hipPitchedPtr *pitchedDevPtr, hipExtent extent) {
  return allocating_call<Api::hipMalloc3D>(
      [&] {
        if (pitchedDevPtr == nullptr || pitchedDevPtr->ptr == nullptr) return Made{};
        return made(value_of(pitchedDevPtr->ptr),
                    times(times(pitchedDevPtr->pitch, extent.height ? extent.height : 1), extent.depth));
      },
      pitchedDevPtr, extent);
}
LG_EXPORT hipError_t hipFree(void *ptr) { return release<Api::hipFree>(ptr); }

// --- Arrays ------------------------------------------------------------------------------------

LG_EXPORT hipError_t hipMallocArray(hipArray_t *array, const hipChannelFormatDesc *desc, size_t width, size_t height,
                                    unsigned int flags) {
  return allocation_of<Api::hipMallocArray>(
      array, [&] { return times(times(channel_bytes(desc), width), height ? height : 1); }, array, desc, width, height,
      flags);
}
LG_EXPORT hipError_t hipMalloc3DArray(hipArray_t *array, const struct hipChannelFormatDesc *desc,
                                      struct hipExtent extent, unsigned int flags) {
  return allocation_of<Api::hipMalloc3DArray>(
      array,
      [&] {
        return times(times(times(channel_bytes(desc), extent.width), extent.height ? extent.height : 1),
                     extent.depth ? extent.depth : 1);
      },
      array, desc, extent, flags);
}
LG_EXPORT hipError_t hipArrayCreate(hipArray_t *pHandle, const HIP_ARRAY_DESCRIPTOR *d) {
  return allocation_of<Api::hipArrayCreate>(
      pHandle,
      [&] {
        return d != nullptr ? lg_array_bytes(d->Width, d->Height, 0, static_cast<CUarray_format>(d->Format),
                                             d->NumChannels, 0, 1)
                            : 0;
      },
      pHandle, d);
}
LG_EXPORT hipError_t hipArray3DCreate(hipArray_t *array, const HIP_ARRAY3D_DESCRIPTOR *d) {
  return allocation_of<Api::hipArray3DCreate>(
      array,
      [&] {
        return d != nullptr ? lg_array_bytes(d->Width, d->Height, d->Depth, static_cast<CUarray_format>(d->Format),
                                             d->NumChannels, d->Flags, 1)
                            : 0;
      },
      array, d);
}
LG_EXPORT hipError_t hipFreeArray(hipArray_t array) { return release<Api::hipFreeArray>(array); }
LG_EXPORT hipError_t hipArrayDestroy(hipArray_t array) { return release<Api::hipArrayDestroy>(array); }

// --- Pinned host memory and registration -------------------------------------------------------

LG_EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  return allocation<Api::hipHostMalloc>(ptr, size, flags);
}
LG_EXPORT hipError_t hipHostAlloc(void **ptr, size_t size, unsigned int flags) {
  return allocation<Api::hipHostAlloc>(ptr, size, flags);
}
LG_EXPORT hipError_t hipMallocHost(void **ptr, size_t size) { return allocation<Api::hipMallocHost>(ptr, size); }
LG_EXPORT hipError_t hipMemAllocHost(void **ptr, size_t size) { return allocation<Api::hipMemAllocHost>(ptr, size); }
LG_EXPORT hipError_t hipHostFree(void *ptr) { return release<Api::hipHostFree>(ptr); }
LG_EXPORT hipError_t hipFreeHost(void *ptr) { return release<Api::hipFreeHost>(ptr); }

// A registration: the value is the program's own buffer, an argument.
LG_EXPORT hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags) {
  return allocating_call<Api::hipHostRegister>(
      [&] { return hostPtr != nullptr ? made(value_of(hostPtr), sizeBytes) : Made{}; }, hostPtr, sizeBytes, flags);
}
LG_EXPORT hipError_t hipHostUnregister(void *hostPtr) { return release<Api::hipHostUnregister>(hostPtr); }

// --- IPC ---------------------------------------------------------------------------------------

LG_EXPORT hipError_t hipIpcOpenMemHandle(void **devPtr, hipIpcMemHandle_t handle, unsigned int flags) {
  const auto anchor = reinterpret_cast<void *>(real<Api::hipIpcOpenMemHandle>());
  return allocation_of<Api::hipIpcOpenMemHandle>(
      devPtr, [&] { return ipc_bytes(anchor, *devPtr); }, devPtr, handle, flags);
}
LG_EXPORT hipError_t hipIpcCloseMemHandle(void *devPtr) { return release<Api::hipIpcCloseMemHandle>(devPtr); }

// --- Stream-ordered memory and pools -----------------------------------------------------------

LG_EXPORT hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream) {
  return allocation<Api::hipMallocAsync>(dev_ptr, size, stream);
}
LG_EXPORT hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size, hipMemPool_t mem_pool, hipStream_t stream) {
  return allocation<Api::hipMallocFromPoolAsync>(dev_ptr, size, mem_pool, stream);
}
LG_EXPORT hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream) {
  return release<Api::hipFreeAsync>(dev_ptr, stream);
}

LG_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool, const hipMemPoolProps *pool_props) {
  return allocating_call<Api::hipMemPoolCreate>(
      [&] {
        if (mem_pool == nullptr || *mem_pool == nullptr) return Made{};
        return made(value_of(*mem_pool), 0, pool_props != nullptr ? device_of(pool_props->location) : -1);
      },
      mem_pool, pool_props);
}
LG_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool) {
  return pool_release<Api::hipMemPoolDestroy>(
      mem_pool, [](void *anchor, hipMemPool_t pool) { return pool_bytes_in_use(anchor, pool); });
}

// --- Virtual memory management -----------------------------------------------------------------

LG_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                                  const hipMemAllocationProp *prop, unsigned long long flags) {
  return allocating_call<Api::hipMemCreate>(
      [&] {
        if (handle == nullptr || *handle == nullptr) return Made{};
        return made(value_of(*handle), size, prop != nullptr ? device_of(prop->location) : -1);
      },
      handle, size, prop, flags);
}
LG_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  return release<Api::hipMemRelease>(handle);
}
LG_EXPORT hipError_t hipMemRetainAllocationHandle(hipMemGenericAllocationHandle_t *handle, void *addr) {
  return reference<Api::hipMemRetainAllocationHandle>(handle, addr);
}
LG_EXPORT hipError_t hipMemImportFromShareableHandle(hipMemGenericAllocationHandle_t *handle, void *osHandle,
                                                     hipMemAllocationHandleType shHandleType) {
  return reference<Api::hipMemImportFromShareableHandle>(handle, osHandle, shHandleType);
}
LG_EXPORT hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                          unsigned long long flags) {
  return allocating_call<Api::hipMemAddressReserve>(
      [&] { return ptr != nullptr && *ptr != nullptr ? made(value_of(*ptr), size, -1) : Made{}; }, ptr, size, alignment,
      addr, flags);
}
LG_EXPORT hipError_t hipMemAddressFree(void *devPtr, size_t size) {
  return release<Api::hipMemAddressFree>(devPtr, size);
}
LG_EXPORT hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                               unsigned long long flags) {
  return call_then<Api::hipMemMap>([&] { note_mapped(value_of(ptr), size); }, ptr, size, offset, handle, flags);
}
LG_EXPORT hipError_t hipMemUnmap(void *ptr, size_t size) {
  return call_then<Api::hipMemUnmap>([&] { note_unmapped(value_of(ptr), size); }, ptr, size);
}

// --- Device reset --------------------------------------------------------------------------------

// Frees everything allocated on the current device, as a context destroy does for CUDA.
LG_EXPORT hipError_t hipDeviceReset(void) {
  const auto real_fn = real<Api::hipDeviceReset>();
  if (real_fn == nullptr) return hipErrorNotInitialized;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  int32_t device = -1;
  leaseguard::ContextDestroyMark mark;
  if (tracker != nullptr) {
    ErrnoKeeper keep;
    device = hip_current_device(reinterpret_cast<void *>(real_fn));
    // Before the reset: another thread may allocate on the device as soon as it is done,
    // before the reset is recorded, and that allocation does not go with it.
    if (device >= 0) mark = tracker->before_context_destroy();
  }
  const hipError_t status = real_fn();
  if (tracker != nullptr && status == hipSuccess && device >= 0) {
    ErrnoKeeper keep;
    tracker->on_context_destroyed(Api::hipDeviceReset, hip_device_token(device), device, mark);
  }
  return status;
}
