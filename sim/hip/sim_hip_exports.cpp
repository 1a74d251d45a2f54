// The exported entry points of the simulated libamdhip64.so.5: the HIP runtime's
// allocation family over the same simulated device as the CUDA driver (sim_device.h).
//
// HIP has no contexts in its API: each thread has a current device (hipSetDevice, default
// 0) whose primary context every call uses, created on first use; hipDeviceReset frees
// everything allocated on the current device. Status codes are the CUDA driver's numbers,
// which HIP shares. As on the real runtime, hipMalloc of 0 bytes succeeds with a NULL
// pointer and hipFree(NULL) succeeds.
#include <atomic>
#include <cstring>

#include "lg_array_bytes.h"
#include "lg_hip.h"
#include "sim_device.h"
#include "sim_entry.h"
#include "sim_kernels.h"

using leaseguard::sim::MemoryKind;
using leaseguard::sim::SimDriver;

namespace {

// Each thread's current device, in initial-exec storage: hipGetDevice, which every hooked
// allocation asks, is one thread-local load, as in the real runtime (thread_local in a shared
// library would call __tls_get_addr).
__thread int t_device __attribute__((tls_model("initial-exec"))) = 0;
constexpr size_t kPitchAlignment = 512;

SimDriver &driver() { return SimDriver::instance(); }
hipError_t hip(CUresult status) { return static_cast<hipError_t>(status); }

// Makes the calling thread's device current: its primary context, retained once per
// process (lock-free, so a fork at any moment leaves nothing held).
hipError_t activate() {
  static std::atomic<CUcontext> primaries[64] = {};
  if (driver().init() != CUDA_SUCCESS) return hipErrorNotInitialized;
  if (t_device < 0 || t_device >= driver().device_count() || t_device >= 64) return hipErrorInvalidDevice;
  CUcontext primary = primaries[t_device].load(std::memory_order_acquire);
  if (primary == nullptr) {
    CUcontext retained = nullptr;
    if (driver().retain_primary(t_device, &retained) != CUDA_SUCCESS) return hipErrorInvalidDevice;
    if (!primaries[t_device].compare_exchange_strong(primary, retained)) driver().release_primary(t_device);
    else primary = retained;
  }
  if (driver().current() != primary) return hip(driver().set_current(primary));
  return hipSuccess;
}

hipError_t allocate(void **ptr, size_t bytes, MemoryKind kind, CUmemoryPool pool = nullptr) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  if (bytes == 0) {
    *ptr = nullptr;
    return hipSuccess;
  }
  uint64_t address = 0;
  CUresult status = driver().allocate(bytes, kind, &address, reinterpret_cast<leaseguard::sim::SimPool *>(pool));
  if (status == CUDA_SUCCESS) *ptr = reinterpret_cast<void *>(address);
  return hip(status);
}

hipError_t release(const void *ptr, std::initializer_list<MemoryKind> kinds) {
  if (ptr == nullptr) return hipSuccess;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  return hip(driver().release(reinterpret_cast<uint64_t>(ptr), kinds));
}

hipError_t pitched(void **ptr, size_t *pitch, size_t width, size_t rows) {
  if (ptr == nullptr || pitch == nullptr || width == 0 || rows == 0) return hipErrorInvalidValue;
  size_t row = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (rows > SIZE_MAX / row) return hipErrorOutOfMemory;
  hipError_t status = allocate(ptr, row * rows, MemoryKind::Pitched);
  if (status == hipSuccess) *pitch = row;
  return status;
}

hipError_t array(hipArray_t *out, size_t bytes) {
  if (out == nullptr || bytes == 0) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  void *handle = nullptr;
  CUresult status = driver().create_array(bytes, false, &handle);
  if (status == CUDA_SUCCESS) *out = static_cast<hipArray_t>(handle);
  return hip(status);
}

size_t element_bytes(const hipChannelFormatDesc *desc) {
  return desc != nullptr ? lg_channel_element_bytes(desc->x, desc->y, desc->z, desc->w) : 0;
}

size_t times(size_t a, size_t b) { return b != 0 && a > SIZE_MAX / b ? 0 : a * b; }

CUmemAllocationProp cuda_prop(const hipMemAllocationProp &prop) {
  CUmemAllocationProp out{};
  out.type = static_cast<CUmemAllocationType>(prop.type);
  out.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(prop.requestedHandleType);
  out.location.type = static_cast<CUmemLocationType>(prop.location.type);
  out.location.id = prop.location.id;
  return out;
}

bool device_range(const void *address, size_t bytes) {
  return driver().range_valid(reinterpret_cast<uint64_t>(address), bytes);
}

struct ErrorText {
  hipError_t code;
  const char *name;
  const char *text;
};

constexpr ErrorText kErrors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidContext, "hipErrorInvalidContext", "invalid device context"},
    {hipErrorAlreadyMapped, "hipErrorAlreadyMapped", "resource already mapped"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorHostMemoryAlreadyRegistered, "hipErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {hipErrorHostMemoryNotRegistered, "hipErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
};

const ErrorText *find_error(hipError_t code) {
  for (const auto &error : kErrors)
    if (error.code == code) return &error;
  return nullptr;
}

}  // namespace

// --- Devices -----------------------------------------------------------------------------------

LG_SIM_EXPORT hipError_t hipInit(unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipInit);
  if (flags != 0) return hipErrorInvalidValue;
  return hip(driver().init());
}

LG_SIM_EXPORT hipError_t hipGetDeviceCount(int *count) {
  LG_SIM_HIP_ENTRY(hipGetDeviceCount);
  if (count == nullptr) return hipErrorInvalidValue;
  *count = driver().device_count();
  return *count > 0 ? hipSuccess : hipErrorNoDevice;
}

LG_SIM_EXPORT hipError_t hipSetDevice(int deviceId) {
  LG_SIM_HIP_ENTRY(hipSetDevice);
  if (deviceId < 0 || deviceId >= driver().device_count()) return hipErrorInvalidDevice;
  t_device = deviceId;
  return activate();
}

LG_SIM_EXPORT hipError_t hipGetDevice(int *deviceId) {
  LG_SIM_HIP_ENTRY(hipGetDevice);
  if (deviceId == nullptr) return hipErrorInvalidValue;
  *deviceId = t_device;
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipDeviceSynchronize(void) {
  LG_SIM_HIP_ENTRY(hipDeviceSynchronize);
  return activate();
}

LG_SIM_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) {
  LG_SIM_HIP_ENTRY(hipStreamSynchronize);
  (void)stream;
  return activate();
}

LG_SIM_EXPORT hipError_t hipDeviceReset(void) {
  LG_SIM_HIP_ENTRY(hipDeviceReset);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  const hipError_t status = hip(driver().reset_primary(t_device));
  driver().linger_after_destroy();
  return status;
}

LG_SIM_EXPORT hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total) {
  LG_SIM_HIP_ENTRY(hipMemGetInfo);
  if (free_bytes == nullptr || total == nullptr) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  *total = driver().capacity();
  *free_bytes = driver().capacity() - driver().used();
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipMemGetAddressRange(hipDeviceptr_t *pbase, size_t *psize, hipDeviceptr_t dptr) {
  LG_SIM_HIP_ENTRY(hipMemGetAddressRange);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  uint64_t base = 0;
  size_t size = 0;
  CUresult status = driver().address_range(reinterpret_cast<uint64_t>(dptr), &base, &size);
  if (status != CUDA_SUCCESS) return hip(status);
  if (pbase != nullptr) *pbase = reinterpret_cast<void *>(base);
  if (psize != nullptr) *psize = size;
  return hipSuccess;
}

LG_SIM_EXPORT const char *hipGetErrorName(hipError_t hip_error) {
  const ErrorText *error = find_error(hip_error);
  return error != nullptr ? error->name : "hipErrorUnknown";
}

LG_SIM_EXPORT const char *hipGetErrorString(hipError_t hip_error) {
  const ErrorText *error = find_error(hip_error);
  return error != nullptr ? error->text : "unknown error";
}

// --- Copies ------------------------------------------------------------------------------------

LG_SIM_EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind) {
  LG_SIM_HIP_ENTRY(hipMemcpy);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  if (sizeBytes == 0) return hipSuccess;
  if (dst == nullptr || src == nullptr) return hipErrorInvalidValue;
  bool ok = true;
  switch (kind) {
    case hipMemcpyHostToDevice: ok = device_range(dst, sizeBytes); break;
    case hipMemcpyDeviceToHost: ok = device_range(src, sizeBytes); break;
    case hipMemcpyDeviceToDevice: ok = device_range(dst, sizeBytes) && device_range(src, sizeBytes); break;
    case hipMemcpyHostToHost:
    case hipMemcpyDefault: break;
    default: return hipErrorInvalidValue;
  }
  if (!ok) return hipErrorInvalidValue;
  std::memmove(dst, src, sizeBytes);
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipMemset(void *dst, int value, size_t sizeBytes) {
  LG_SIM_HIP_ENTRY(hipMemset);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  if (sizeBytes == 0) return hipSuccess;
  if (!device_range(dst, sizeBytes)) return hipErrorInvalidValue;
  std::memset(dst, value, sizeBytes);
  return hipSuccess;
}

// --- Device, managed and pitched memory ---------------------------------------------------------

LG_SIM_EXPORT hipError_t hipMalloc(void **ptr, size_t size) {
  LG_SIM_HIP_ENTRY(hipMalloc);
  return allocate(ptr, size, MemoryKind::Device);
}

LG_SIM_EXPORT hipError_t hipExtMallocWithFlags(void **ptr, size_t sizeBytes, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipExtMallocWithFlags);
  if ((flags & ~0x7u) != 0) return hipErrorInvalidValue;
  return allocate(ptr, sizeBytes, MemoryKind::Device);
}

LG_SIM_EXPORT hipError_t hipMallocManaged(void **dev_ptr, size_t size, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipMallocManaged);
  if (flags != 1 && flags != 2) return hipErrorInvalidValue;  // hipMemAttachGlobal or Host
  return allocate(dev_ptr, size, MemoryKind::Managed);
}

LG_SIM_EXPORT hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height) {
  LG_SIM_HIP_ENTRY(hipMallocPitch);
  return pitched(ptr, pitch, width, height);
}

LG_SIM_EXPORT hipError_t hipMemAllocPitch(hipDeviceptr_t *dptr, size_t *pitch, size_t widthInBytes, size_t height,
                                          unsigned int elementSizeBytes) {
  LG_SIM_HIP_ENTRY(hipMemAllocPitch);
  if (elementSizeBytes != 4 && elementSizeBytes != 8 && elementSizeBytes != 16) return hipErrorInvalidValue;
  return pitched(dptr, pitch, widthInBytes, height);
}

LG_SIM_EXPORT hipError_t hipMalloc3D(hipPitchedPtr *pitchedDevPtr, hipExtent extent) {
  LG_SIM_HIP_ENTRY(hipMalloc3D);
  if (pitchedDevPtr == nullptr || extent.depth == 0) return hipErrorInvalidValue;
  if (extent.height != 0 && extent.depth > SIZE_MAX / extent.height) return hipErrorOutOfMemory;
  void *ptr = nullptr;
  size_t pitch = 0;
  hipError_t status = pitched(&ptr, &pitch, extent.width, extent.height * extent.depth);
  if (status == hipSuccess) *pitchedDevPtr = hipPitchedPtr{ptr, pitch, extent.width, extent.height};
  return status;
}

LG_SIM_EXPORT hipError_t hipFree(void *ptr) {
  LG_SIM_HIP_ENTRY(hipFree);
  return release(ptr, {MemoryKind::Device, MemoryKind::Pitched, MemoryKind::Managed, MemoryKind::Async});
}

// --- Arrays ------------------------------------------------------------------------------------

LG_SIM_EXPORT hipError_t hipMallocArray(hipArray_t *out, const hipChannelFormatDesc *desc, size_t width, size_t height,
                                        unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipMallocArray);
  (void)flags;
  return array(out, times(times(element_bytes(desc), width), height ? height : 1));
}

LG_SIM_EXPORT hipError_t hipMalloc3DArray(hipArray_t *out, const struct hipChannelFormatDesc *desc,
                                          struct hipExtent extent, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipMalloc3DArray);
  (void)flags;
  size_t plane = times(times(element_bytes(desc), extent.width), extent.height ? extent.height : 1);
  return array(out, times(plane, extent.depth ? extent.depth : 1));
}

LG_SIM_EXPORT hipError_t hipArrayCreate(hipArray_t *pHandle, const HIP_ARRAY_DESCRIPTOR *d) {
  LG_SIM_HIP_ENTRY(hipArrayCreate);
  if (d == nullptr) return hipErrorInvalidValue;
  return array(pHandle,
               lg_array_bytes(d->Width, d->Height, 0, static_cast<CUarray_format>(d->Format), d->NumChannels, 0, 1));
}

LG_SIM_EXPORT hipError_t hipArray3DCreate(hipArray_t *out, const HIP_ARRAY3D_DESCRIPTOR *d) {
  LG_SIM_HIP_ENTRY(hipArray3DCreate);
  if (d == nullptr) return hipErrorInvalidValue;
  return array(out, lg_array_bytes(d->Width, d->Height, d->Depth, static_cast<CUarray_format>(d->Format),
                                   d->NumChannels, d->Flags, 1));
}

LG_SIM_EXPORT hipError_t hipFreeArray(hipArray_t handle) {
  LG_SIM_HIP_ENTRY(hipFreeArray);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  return hip(driver().destroy_array(handle, false));
}

LG_SIM_EXPORT hipError_t hipArrayDestroy(hipArray_t handle) {
  LG_SIM_HIP_ENTRY(hipArrayDestroy);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  return hip(driver().destroy_array(handle, false));
}

// --- Pinned host memory and registration -------------------------------------------------------

LG_SIM_EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipHostMalloc);
  (void)flags;
  return allocate(ptr, size, MemoryKind::Host);
}

LG_SIM_EXPORT hipError_t hipHostAlloc(void **ptr, size_t size, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipHostAlloc);
  (void)flags;
  return allocate(ptr, size, MemoryKind::Host);
}

LG_SIM_EXPORT hipError_t hipMallocHost(void **ptr, size_t size) {
  LG_SIM_HIP_ENTRY(hipMallocHost);
  return allocate(ptr, size, MemoryKind::Host);
}

LG_SIM_EXPORT hipError_t hipMemAllocHost(void **ptr, size_t size) {
  LG_SIM_HIP_ENTRY(hipMemAllocHost);
  return allocate(ptr, size, MemoryKind::Host);
}

LG_SIM_EXPORT hipError_t hipHostFree(void *ptr) {
  LG_SIM_HIP_ENTRY(hipHostFree);
  return release(ptr, {MemoryKind::Host});
}

LG_SIM_EXPORT hipError_t hipFreeHost(void *ptr) {
  LG_SIM_HIP_ENTRY(hipFreeHost);
  return release(ptr, {MemoryKind::Host});
}

LG_SIM_EXPORT hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipHostRegister);
  (void)flags;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  return hip(driver().register_host(hostPtr, sizeBytes));
}

LG_SIM_EXPORT hipError_t hipHostUnregister(void *hostPtr) {
  LG_SIM_HIP_ENTRY(hipHostUnregister);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  return hip(driver().unregister_host(hostPtr));
}

// --- IPC ---------------------------------------------------------------------------------------

LG_SIM_EXPORT hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t *handle, void *devPtr) {
  LG_SIM_HIP_ENTRY(hipIpcGetMemHandle);
  if (hipError_t status = activate(); status != hipSuccess) return status;
  static_assert(sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle));
  return hip(driver().ipc_get_handle(reinterpret_cast<CUipcMemHandle *>(handle), reinterpret_cast<uint64_t>(devPtr)));
}

LG_SIM_EXPORT hipError_t hipIpcOpenMemHandle(void **devPtr, hipIpcMemHandle_t handle, unsigned int flags) {
  LG_SIM_HIP_ENTRY(hipIpcOpenMemHandle);
  if (devPtr == nullptr || (flags & ~1u) != 0) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  CUipcMemHandle cuda_handle;
  std::memcpy(&cuda_handle, &handle, sizeof cuda_handle);
  CUdeviceptr address = 0;
  CUresult status = driver().ipc_open(&address, cuda_handle);
  if (status == CUDA_SUCCESS) *devPtr = reinterpret_cast<void *>(address);
  return hip(status);
}

LG_SIM_EXPORT hipError_t hipIpcCloseMemHandle(void *devPtr) {
  LG_SIM_HIP_ENTRY(hipIpcCloseMemHandle);
  if (devPtr == nullptr) return hipErrorInvalidValue;
  return release(devPtr, {MemoryKind::Ipc});
}

// --- Stream-ordered memory and pools -----------------------------------------------------------

LG_SIM_EXPORT hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream) {
  LG_SIM_HIP_ENTRY(hipMallocAsync);
  (void)stream;
  if (size == 0) return hipErrorInvalidValue;
  return allocate(dev_ptr, size, MemoryKind::Async);
}

LG_SIM_EXPORT hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size, hipMemPool_t mem_pool,
                                                hipStream_t stream) {
  LG_SIM_HIP_ENTRY(hipMallocFromPoolAsync);
  (void)stream;
  if (mem_pool == nullptr || size == 0) return hipErrorInvalidValue;
  return allocate(dev_ptr, size, MemoryKind::Async, reinterpret_cast<CUmemoryPool>(mem_pool));
}

LG_SIM_EXPORT hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream) {
  LG_SIM_HIP_ENTRY(hipFreeAsync);
  (void)stream;
  if (dev_ptr == nullptr) return hipErrorInvalidValue;
  return release(dev_ptr, {MemoryKind::Async, MemoryKind::Device});
}

LG_SIM_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool, const hipMemPoolProps *pool_props) {
  LG_SIM_HIP_ENTRY(hipMemPoolCreate);
  if (mem_pool == nullptr || pool_props == nullptr) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  CUmemPoolProps props{};
  props.allocType = static_cast<CUmemAllocationType>(pool_props->allocType);
  props.handleTypes = static_cast<CUmemAllocationHandleType>(pool_props->handleTypes);
  props.location.type = static_cast<CUmemLocationType>(pool_props->location.type);
  props.location.id = pool_props->location.id;
  return hip(driver().create_pool(&props, reinterpret_cast<CUmemoryPool *>(mem_pool)));
}

LG_SIM_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool) {
  LG_SIM_HIP_ENTRY(hipMemPoolDestroy);
  return hip(driver().destroy_pool(reinterpret_cast<CUmemoryPool>(mem_pool)));
}

LG_SIM_EXPORT hipError_t hipMemPoolTrimTo(hipMemPool_t mem_pool, size_t min_bytes_to_hold) {
  LG_SIM_HIP_ENTRY(hipMemPoolTrimTo);
  (void)min_bytes_to_hold;
  return hip(driver().trim_pool(reinterpret_cast<CUmemoryPool>(mem_pool)));
}

LG_SIM_EXPORT hipError_t hipMemPoolGetAttribute(hipMemPool_t mem_pool, hipMemPoolAttr attr, void *value) {
  LG_SIM_HIP_ENTRY(hipMemPoolGetAttribute);
  return hip(
      driver().pool_attribute(reinterpret_cast<CUmemoryPool>(mem_pool), static_cast<CUmemPool_attribute>(attr), value));
}

LG_SIM_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *mem_pool, int device) {
  LG_SIM_HIP_ENTRY(hipDeviceGetDefaultMemPool);
  if (mem_pool == nullptr) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  auto *pool = driver().default_pool(device);
  if (pool == nullptr) return hipErrorInvalidDevice;
  *mem_pool = reinterpret_cast<hipMemPool_t>(pool);
  return hipSuccess;
}

// --- Virtual memory management -----------------------------------------------------------------

LG_SIM_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                                      const hipMemAllocationProp *prop, unsigned long long flags) {
  LG_SIM_HIP_ENTRY(hipMemCreate);
  if (handle == nullptr || prop == nullptr || flags != 0) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  CUmemAllocationProp cuda = cuda_prop(*prop);
  CUmemGenericAllocationHandle value = 0;
  CUresult status = driver().vmm_create(&value, size, &cuda);
  if (status == CUDA_SUCCESS) *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>(value);
  return hip(status);
}

LG_SIM_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  LG_SIM_HIP_ENTRY(hipMemRelease);
  return hip(driver().vmm_release(reinterpret_cast<CUmemGenericAllocationHandle>(handle)));
}

LG_SIM_EXPORT hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                              unsigned long long flags) {
  LG_SIM_HIP_ENTRY(hipMemAddressReserve);
  if (ptr == nullptr || flags != 0) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  CUdeviceptr base = 0;
  CUresult status = driver().vmm_reserve(&base, size, alignment, reinterpret_cast<CUdeviceptr>(addr));
  if (status == CUDA_SUCCESS) *ptr = reinterpret_cast<void *>(base);
  return hip(status);
}

LG_SIM_EXPORT hipError_t hipMemAddressFree(void *devPtr, size_t size) {
  LG_SIM_HIP_ENTRY(hipMemAddressFree);
  return hip(driver().vmm_free_range(reinterpret_cast<CUdeviceptr>(devPtr), size));
}

LG_SIM_EXPORT hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                   unsigned long long flags) {
  LG_SIM_HIP_ENTRY(hipMemMap);
  if (flags != 0) return hipErrorInvalidValue;
  return hip(driver().vmm_map(reinterpret_cast<CUdeviceptr>(ptr), size, offset,
                              reinterpret_cast<CUmemGenericAllocationHandle>(handle)));
}

LG_SIM_EXPORT hipError_t hipMemUnmap(void *ptr, size_t size) {
  LG_SIM_HIP_ENTRY(hipMemUnmap);
  return hip(driver().vmm_unmap(reinterpret_cast<CUdeviceptr>(ptr), size));
}

LG_SIM_EXPORT hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count) {
  LG_SIM_HIP_ENTRY(hipMemSetAccess);
  if (desc == nullptr || count == 0 || count > 64) return hipErrorInvalidValue;
  CUmemAccessDesc cuda[64];
  for (size_t i = 0; i < count; ++i) {
    cuda[i].location.type = static_cast<CUmemLocationType>(desc[i].location.type);
    cuda[i].location.id = desc[i].location.id;
    cuda[i].flags = static_cast<CUmemAccess_flags>(desc[i].flags);
  }
  return hip(driver().vmm_set_access(reinterpret_cast<CUdeviceptr>(ptr), size, cuda, count));
}

LG_SIM_EXPORT hipError_t hipMemGetAllocationGranularity(size_t *granularity, const hipMemAllocationProp *prop,
                                                        hipMemAllocationGranularity_flags option) {
  LG_SIM_HIP_ENTRY(hipMemGetAllocationGranularity);
  if (granularity == nullptr || prop == nullptr ||
      (option != hipMemAllocationGranularityMinimum && option != hipMemAllocationGranularityRecommended))
    return hipErrorInvalidValue;
  *granularity = SimDriver::kVmmGranularity;
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipMemRetainAllocationHandle(hipMemGenericAllocationHandle_t *handle, void *addr) {
  LG_SIM_HIP_ENTRY(hipMemRetainAllocationHandle);
  if (handle == nullptr) return hipErrorInvalidValue;
  CUmemGenericAllocationHandle value = 0;
  CUresult status = driver().vmm_retain(&value, addr);
  if (status == CUDA_SUCCESS) *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>(value);
  return hip(status);
}

LG_SIM_EXPORT hipError_t hipMemExportToShareableHandle(void *shareableHandle, hipMemGenericAllocationHandle_t handle,
                                                       hipMemAllocationHandleType handleType,
                                                       unsigned long long flags) {
  LG_SIM_HIP_ENTRY(hipMemExportToShareableHandle);
  if (flags != 0) return hipErrorInvalidValue;
  return hip(driver().vmm_export(shareableHandle, reinterpret_cast<CUmemGenericAllocationHandle>(handle),
                                 static_cast<CUmemAllocationHandleType>(handleType)));
}

LG_SIM_EXPORT hipError_t hipMemImportFromShareableHandle(hipMemGenericAllocationHandle_t *handle, void *osHandle,
                                                         hipMemAllocationHandleType shHandleType) {
  LG_SIM_HIP_ENTRY(hipMemImportFromShareableHandle);
  if (handle == nullptr) return hipErrorInvalidValue;
  CUmemGenericAllocationHandle value = 0;
  CUresult status = driver().vmm_import(&value, osHandle, static_cast<CUmemAllocationHandleType>(shHandleType));
  if (status == CUDA_SUCCESS) *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>(value);
  return hip(status);
}

// --- Modules and launches (sim_kernels.h) -----------------------------------------------------

LG_SIM_EXPORT hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  LG_SIM_HIP_ENTRY(hipModuleLoadData);
  if (module == nullptr || image == nullptr) return hipErrorInvalidValue;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  auto *loaded = leaseguard::sim::load_module(image);
  if (loaded == nullptr) return hipErrorInvalidImage;
  *module = reinterpret_cast<hipModule_t>(loaded);
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  LG_SIM_HIP_ENTRY(hipModuleUnload);
  auto *loaded = reinterpret_cast<leaseguard::sim::SimModule *>(module);
  if (!leaseguard::sim::module_valid(loaded)) return hipErrorInvalidHandle;
  leaseguard::sim::unload_module(loaded);
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *kname) {
  LG_SIM_HIP_ENTRY(hipModuleGetFunction);
  auto *loaded = reinterpret_cast<leaseguard::sim::SimModule *>(module);
  if (function == nullptr || kname == nullptr) return hipErrorInvalidValue;
  if (!leaseguard::sim::module_valid(loaded)) return hipErrorInvalidHandle;
  const auto *kernel = leaseguard::sim::find_kernel(loaded, kname);
  if (kernel == nullptr) return hipErrorNotFound;
  *function = reinterpret_cast<hipFunction_t>(const_cast<leaseguard::sim::SimKernel *>(kernel));
  return hipSuccess;
}

LG_SIM_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                               void **kernelParams, void **extra) {
  LG_SIM_HIP_ENTRY(hipModuleLaunchKernel);
  (void)sharedMemBytes;
  (void)stream;
  if (hipError_t status = activate(); status != hipSuccess) return status;
  const auto *kernel = reinterpret_cast<const leaseguard::sim::SimKernel *>(f);
  if (!leaseguard::sim::kernel_valid(kernel)) return hipErrorInvalidHandle;
  uint64_t threads = uint64_t{gridDimX} * gridDimY * gridDimZ * blockDimX * blockDimY * blockDimZ;
  if (threads == 0 || blockDimX * uint64_t{blockDimY} * blockDimZ > 1024) return hipErrorInvalidValue;
  leaseguard::sim::KernelLaunch launch;
  launch.threads = threads > UINT32_MAX ? UINT32_MAX : static_cast<unsigned>(threads);
  int status = leaseguard::sim::resolve_arguments(*kernel, kernelParams, extra, LG_HIP_LAUNCH_PARAM_BUFFER_POINTER,
                                                  LG_HIP_LAUNCH_PARAM_BUFFER_SIZE, LG_HIP_LAUNCH_PARAM_END, launch);
  if (status != 0) return static_cast<hipError_t>(status);
  return static_cast<hipError_t>(kernel->run(launch));
}

// For tests: how many times entry point `name` was called in this process.
LG_SIM_EXPORT uint64_t leaseguard_sim_call_count(const char *name) {
  return name != nullptr ? leaseguard::sim::call_count(name) : 0;
}

// For tests: adds faults in the LEASEGUARD_SIM_FAULTS syntax, from now on.
LG_SIM_EXPORT void leaseguard_sim_add_faults(const char *spec) { leaseguard::sim::add_faults(spec); }
