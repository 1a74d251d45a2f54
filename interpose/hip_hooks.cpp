// The preload's definitions of the HIP runtime's allocation family.
//
// The rules are the CUDA hooks' (cuda_hooks.cpp): forward with the caller's arguments,
// return the runtime's status unchanged, record after success only what a non-NULL
// out-parameter holds (hipMalloc of 0 bytes succeeds with NULL: nothing is recorded), take a
// record out before its release. The definitions are unversioned (exports.map), so an
// application's references to hipMalloc@hip_4.2 bind to them.
#include "hip_queries.h"
#include "hook_support.h"
#include "lg_array_bytes.h"
#include "lg_hip.h"
#include "vmm_mappings.h"

using leaseguard::AllocationEvent;
using leaseguard::Api;
using leaseguard::Kind;
using leaseguard::Tracker;
using namespace leaseguard::interpose;

// Resolves the real function or returns hipErrorNotInitialized, as a missing runtime would.
#define LG_HIP_HOOK_PROLOGUE(name)                                   \
  auto real_fn = real<lg_pfn_##name>(Hook::name);                    \
  if (real_fn == nullptr) return hipErrorNotInitialized;             \
  ReentryGuard guard;                                                \
  Tracker *tracker = tracker_for(guard);                             \
  void *anchor = reinterpret_cast<void *>(real_fn)

namespace {

// Always inlined into the hook: it reads the hook's frame (LG_HOOK_CALLER).
__attribute__((always_inline)) inline void record(Tracker *tracker, Api api, Kind kind, const void *value,
                                                  uint64_t bytes, void *anchor, int32_t device = kDeviceOfContext) {
  ErrnoKeeper keep;
  if (device == kDeviceOfContext) device = hip_current_device(anchor);
  AllocationEvent event;
  event.api = api;
  event.kind = kind;
  event.address = reinterpret_cast<uint64_t>(value);
  event.bytes = bytes;
  event.device = device;
  event.context = hip_device_token(device);
  event.caller = LG_HOOK_CALLER();
  tracker->on_alloc(event);
}

uint64_t times(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

}  // namespace

// An allocation whose out-parameter is `void **out` holding `bytes` bytes.
#define LG_HIP_ALLOC_HOOK(name, kind, params, args, bytes)                              \
  LG_EXPORT hipError_t name params {                                                   \
    LG_HIP_HOOK_PROLOGUE(name);                                                        \
    hipError_t status = real_fn args;                                                  \
    if (tracker != nullptr && status == hipSuccess && out != nullptr && *out != nullptr) \
      record(tracker, Api::name, kind, *out, bytes, anchor);                           \
    return status;                                                                     \
  }

#define LG_HIP_RELEASE_HOOK(name, params, args, value)                                                   \
  LG_EXPORT hipError_t name params {                                                                    \
    LG_HIP_HOOK_PROLOGUE(name);                                                                         \
    (void)anchor;                                                                                       \
    if (tracker != nullptr && value != nullptr && already_reclaimed(tracker, Api::name, value_of(value))) \
      return hipSuccess;                                                                                \
    return real_fn args;                                                                                \
  }

// --- Device, managed and pitched memory ---------------------------------------------------------

LG_HIP_ALLOC_HOOK(hipMalloc, Kind::Device, (void **out, size_t size), (out, size), size)
LG_HIP_ALLOC_HOOK(hipExtMallocWithFlags, Kind::Device, (void **out, size_t size, unsigned int flags),
                  (out, size, flags), size)
LG_HIP_ALLOC_HOOK(hipMallocManaged, Kind::Managed, (void **out, size_t size, unsigned int flags), (out, size, flags),
                  size)
LG_HIP_ALLOC_HOOK(hipMallocPitch, Kind::Pitched, (void **out, size_t *pitch, size_t width, size_t height),
                  (out, pitch, width, height), pitch != nullptr ? times(*pitch, height) : 0)
LG_HIP_ALLOC_HOOK(hipMemAllocPitch, Kind::Pitched,
                  (hipDeviceptr_t * out, size_t *pitch, size_t width, size_t height, unsigned int element_bytes),
                  (out, pitch, width, height, element_bytes), pitch != nullptr ? times(*pitch, height) : 0)

LG_EXPORT hipError_t hipMalloc3D(hipPitchedPtr *pitchedDevPtr, hipExtent extent) {
  LG_HIP_HOOK_PROLOGUE(hipMalloc3D);
  hipError_t status = real_fn(pitchedDevPtr, extent);
  if (tracker != nullptr && status == hipSuccess && pitchedDevPtr != nullptr && pitchedDevPtr->ptr != nullptr)
    record(tracker, Api::hipMalloc3D, Kind::Pitched, pitchedDevPtr->ptr,
           times(times(pitchedDevPtr->pitch, extent.height ? extent.height : 1), extent.depth), anchor);
  return status;
}

LG_HIP_RELEASE_HOOK(hipFree, (void *ptr), (ptr), ptr)

// --- Arrays ------------------------------------------------------------------------------------

namespace {
uint64_t channel_bytes(const hipChannelFormatDesc *desc) {
  return desc != nullptr ? lg_channel_element_bytes(desc->x, desc->y, desc->z, desc->w) : 0;
}
}  // namespace

LG_HIP_ALLOC_HOOK(hipMallocArray, Kind::Array,
                  (hipArray_t * out, const hipChannelFormatDesc *desc, size_t width, size_t height, unsigned int flags),
                  (out, desc, width, height, flags), times(times(channel_bytes(desc), width), height ? height : 1))
LG_HIP_ALLOC_HOOK(hipMalloc3DArray, Kind::Array,
                  (hipArray_t * out, const struct hipChannelFormatDesc *desc, struct hipExtent extent, unsigned int flags),
                  (out, desc, extent, flags),
                  times(times(times(channel_bytes(desc), extent.width), extent.height ? extent.height : 1),
                        extent.depth ? extent.depth : 1))
LG_HIP_ALLOC_HOOK(hipArrayCreate, Kind::Array, (hipArray_t * out, const HIP_ARRAY_DESCRIPTOR *d), (out, d),
                  d != nullptr ? lg_array_bytes(d->Width, d->Height, 0, static_cast<CUarray_format>(d->Format),
                                                d->NumChannels, 0, 1)
                               : 0)
LG_HIP_ALLOC_HOOK(hipArray3DCreate, Kind::Array, (hipArray_t * out, const HIP_ARRAY3D_DESCRIPTOR *d), (out, d),
                  d != nullptr ? lg_array_bytes(d->Width, d->Height, d->Depth, static_cast<CUarray_format>(d->Format),
                                                d->NumChannels, d->Flags, 1)
                               : 0)
LG_HIP_RELEASE_HOOK(hipFreeArray, (hipArray_t array), (array), array)
LG_HIP_RELEASE_HOOK(hipArrayDestroy, (hipArray_t array), (array), array)

// --- Pinned host memory and registration -------------------------------------------------------

LG_HIP_ALLOC_HOOK(hipHostMalloc, Kind::Host, (void **out, size_t size, unsigned int flags), (out, size, flags), size)
LG_HIP_ALLOC_HOOK(hipHostAlloc, Kind::Host, (void **out, size_t size, unsigned int flags), (out, size, flags), size)
LG_HIP_ALLOC_HOOK(hipMallocHost, Kind::Host, (void **out, size_t size), (out, size), size)
LG_HIP_ALLOC_HOOK(hipMemAllocHost, Kind::Host, (void **out, size_t size), (out, size), size)
LG_HIP_RELEASE_HOOK(hipHostFree, (void *ptr), (ptr), ptr)
LG_HIP_RELEASE_HOOK(hipFreeHost, (void *ptr), (ptr), ptr)

LG_EXPORT hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags) {
  LG_HIP_HOOK_PROLOGUE(hipHostRegister);
  hipError_t status = real_fn(hostPtr, sizeBytes, flags);
  if (tracker != nullptr && status == hipSuccess && hostPtr != nullptr)
    record(tracker, Api::hipHostRegister, Kind::Registered, hostPtr, sizeBytes, anchor);
  return status;
}
LG_HIP_RELEASE_HOOK(hipHostUnregister, (void *hostPtr), (hostPtr), hostPtr)

// --- IPC ---------------------------------------------------------------------------------------

LG_EXPORT hipError_t hipIpcOpenMemHandle(void **devPtr, hipIpcMemHandle_t handle, unsigned int flags) {
  LG_HIP_HOOK_PROLOGUE(hipIpcOpenMemHandle);
  hipError_t status = real_fn(devPtr, handle, flags);
  if (tracker != nullptr && status == hipSuccess && devPtr != nullptr && *devPtr != nullptr) {
    uint64_t bytes = 0;
    {
      ErrnoKeeper keep;
      auto range = reinterpret_cast<lg_pfn_hipMemGetAddressRange>(driver_symbol(anchor, "hipMemGetAddressRange"));
      hipDeviceptr_t base = nullptr;
      size_t size = 0;
      if (range != nullptr && range(&base, &size, *devPtr) == hipSuccess) bytes = size;
    }
    record(tracker, Api::hipIpcOpenMemHandle, Kind::Ipc, *devPtr, bytes, anchor);
  }
  return status;
}
LG_HIP_RELEASE_HOOK(hipIpcCloseMemHandle, (void *devPtr), (devPtr), devPtr)

// --- Stream-ordered memory and pools -----------------------------------------------------------

LG_HIP_ALLOC_HOOK(hipMallocAsync, Kind::Async, (void **out, size_t size, hipStream_t stream), (out, size, stream), size)
LG_HIP_ALLOC_HOOK(hipMallocFromPoolAsync, Kind::Async,
                  (void **out, size_t size, hipMemPool_t pool, hipStream_t stream), (out, size, pool, stream), size)
LG_HIP_RELEASE_HOOK(hipFreeAsync, (void *dev_ptr, hipStream_t stream), (dev_ptr, stream), dev_ptr)

LG_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool, const hipMemPoolProps *pool_props) {
  LG_HIP_HOOK_PROLOGUE(hipMemPoolCreate);
  hipError_t status = real_fn(mem_pool, pool_props);
  if (tracker != nullptr && status == hipSuccess && mem_pool != nullptr && *mem_pool != nullptr)
    record(tracker, Api::hipMemPoolCreate, Kind::Pool, *mem_pool, 0, anchor,
           pool_props != nullptr && pool_props->location.type == hipMemLocationTypeDevice ? pool_props->location.id : -1);
  return status;
}

LG_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool) {
  LG_HIP_HOOK_PROLOGUE(hipMemPoolDestroy);
  if (tracker == nullptr || mem_pool == nullptr) return real_fn(mem_pool);
  if (already_reclaimed(tracker, Api::hipMemPoolDestroy, value_of(mem_pool))) return hipSuccess;
  uint64_t outstanding = 0;
  {
    ErrnoKeeper keep;
    auto attribute = reinterpret_cast<lg_pfn_hipMemPoolGetAttribute>(driver_symbol(anchor, "hipMemPoolGetAttribute"));
    uint64_t used = 0;
    if (attribute != nullptr && attribute(mem_pool, hipMemPoolAttrUsedMemCurrent, &used) == hipSuccess) outstanding = used;
  }
  hipError_t status = real_fn(mem_pool);
  if (status == hipSuccess && outstanding != 0) {
    ErrnoKeeper keep;
    tracker->on_pool_destroyed_in_use(value_of(mem_pool), outstanding);
  }
  return status;
}

// --- Virtual memory management -----------------------------------------------------------------

LG_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size, const hipMemAllocationProp *prop,
                                  unsigned long long flags) {
  LG_HIP_HOOK_PROLOGUE(hipMemCreate);
  hipError_t status = real_fn(handle, size, prop, flags);
  if (tracker != nullptr && status == hipSuccess && handle != nullptr && *handle != nullptr)
    record(tracker, Api::hipMemCreate, Kind::Vmm, *handle, size, anchor,
           prop != nullptr && prop->location.type == hipMemLocationTypeDevice ? prop->location.id : -1);
  return status;
}

LG_HIP_RELEASE_HOOK(hipMemRelease, (hipMemGenericAllocationHandle_t handle), (handle), handle)

LG_EXPORT hipError_t hipMemRetainAllocationHandle(hipMemGenericAllocationHandle_t *handle, void *addr) {
  LG_HIP_HOOK_PROLOGUE(hipMemRetainAllocationHandle);
  hipError_t status = real_fn(handle, addr);
  if (tracker != nullptr && status == hipSuccess && handle != nullptr && *handle != nullptr)
    record(tracker, Api::hipMemRetainAllocationHandle, Kind::Vmm, *handle, 0, anchor, -1);
  return status;
}

LG_EXPORT hipError_t hipMemImportFromShareableHandle(hipMemGenericAllocationHandle_t *handle, void *osHandle,
                                                     hipMemAllocationHandleType shHandleType) {
  LG_HIP_HOOK_PROLOGUE(hipMemImportFromShareableHandle);
  hipError_t status = real_fn(handle, osHandle, shHandleType);
  if (tracker != nullptr && status == hipSuccess && handle != nullptr && *handle != nullptr)
    record(tracker, Api::hipMemImportFromShareableHandle, Kind::Vmm, *handle, 0, anchor, -1);
  return status;
}

LG_EXPORT hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                          unsigned long long flags) {
  LG_HIP_HOOK_PROLOGUE(hipMemAddressReserve);
  hipError_t status = real_fn(ptr, size, alignment, addr, flags);
  if (tracker != nullptr && status == hipSuccess && ptr != nullptr && *ptr != nullptr)
    record(tracker, Api::hipMemAddressReserve, Kind::Vmm, *ptr, size, anchor, -1);
  return status;
}

LG_HIP_RELEASE_HOOK(hipMemAddressFree, (void *devPtr, size_t size), (devPtr, size), devPtr)

LG_EXPORT hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                               unsigned long long flags) {
  LG_HIP_HOOK_PROLOGUE(hipMemMap);
  (void)anchor;
  hipError_t status = real_fn(ptr, size, offset, handle, flags);
  if (tracker != nullptr && status == hipSuccess) note_mapped(reinterpret_cast<uint64_t>(ptr), size);
  return status;
}

LG_EXPORT hipError_t hipMemUnmap(void *ptr, size_t size) {
  LG_HIP_HOOK_PROLOGUE(hipMemUnmap);
  (void)anchor;
  hipError_t status = real_fn(ptr, size);
  if (tracker != nullptr && status == hipSuccess) note_unmapped(reinterpret_cast<uint64_t>(ptr), size);
  return status;
}

// --- Device reset --------------------------------------------------------------------------------

// Frees everything allocated on the current device, as a context destroy does for CUDA.
LG_EXPORT hipError_t hipDeviceReset(void) {
  LG_HIP_HOOK_PROLOGUE(hipDeviceReset);
  int32_t device = -1;
  leaseguard::ContextDestroyMark mark;
  if (tracker != nullptr) {
    ErrnoKeeper keep;
    device = hip_current_device(anchor);
    // Before the reset: another thread may allocate on the device as soon as it is done,
    // before the reset is recorded, and that allocation does not go with it.
    if (device >= 0) mark = tracker->before_context_destroy();
  }
  hipError_t status = real_fn();
  if (tracker != nullptr && status == hipSuccess && device >= 0) {
    ErrnoKeeper keep;
    tracker->on_context_destroyed(Api::hipDeviceReset, hip_device_token(device), device, mark);
  }
  return status;
}
