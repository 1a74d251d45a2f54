// The driver entry points the preload intercepts, and where each one's real function is.
//
// Each hooked name has: a slot holding the driver's real function (filled from whichever
// path first resolves it: RTLD_NEXT for programs linked with -lcuda, dlsym on a handle, or
// cuGetProcAddress), the family it belongs to (the name cuGetProcAddress is asked for) and
// the cudaVersion that introduced it, so a wrapper can be chosen for exactly the variant
// the driver returned.
#pragma once

#include <atomic>
#include <cstddef>

namespace leaseguard::interpose {

// X(name, family, since, per_thread). HIP entry points have no variants: family is the name,
// since is 0 (they are never asked for through cuGetProcAddress).
#define LG_HOOKED_FUNCTIONS(X)                                                  \
  X(cuMemAlloc, "cuMemAlloc", 2000, false)                                      \
  X(cuMemAlloc_v2, "cuMemAlloc", 3020, false)                                   \
  X(cuMemAllocPitch, "cuMemAllocPitch", 2000, false)                            \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, false)                         \
  X(cuMemAllocManaged, "cuMemAllocManaged", 6000, false)                        \
  X(cuMemAllocHost, "cuMemAllocHost", 2000, false)                              \
  X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, false)                           \
  X(cuMemHostAlloc, "cuMemHostAlloc", 2020, false)                              \
  X(cuMemAllocAsync, "cuMemAllocAsync", 11020, false)                           \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, true)                       \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, false)           \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, true)       \
  X(cuMemFree, "cuMemFree", 2000, false)                                        \
  X(cuMemFree_v2, "cuMemFree", 3020, false)                                     \
  X(cuMemFreeHost, "cuMemFreeHost", 2000, false)                                \
  X(cuMemFreeAsync, "cuMemFreeAsync", 11020, false)                             \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, true)                         \
  X(cuCtxDestroy, "cuCtxDestroy", 2000, false)                                  \
  X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, false)                               \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 7000, false)        \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, false)    \
  X(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, false)            \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, false)        \
  X(cuGetProcAddress, "cuGetProcAddress", 11030, false)                         \
  X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, false)                     \
  X(cuMemCreate, "cuMemCreate", 10020, false)                                   \
  X(cuMemRelease, "cuMemRelease", 10020, false)                                 \
  X(cuMemAddressReserve, "cuMemAddressReserve", 10020, false)                   \
  X(cuMemAddressFree, "cuMemAddressFree", 10020, false)                         \
  X(cuMemMap, "cuMemMap", 10020, false)                                         \
  X(cuMemUnmap, "cuMemUnmap", 10020, false)                                     \
  X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", 11000, false)   \
  X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle", 10020, false) \
  X(cuMemPoolCreate, "cuMemPoolCreate", 11020, false)                           \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, false)                         \
  X(cuArrayCreate, "cuArrayCreate", 2000, false)                                \
  X(cuArrayCreate_v2, "cuArrayCreate", 3020, false)                             \
  X(cuArray3DCreate, "cuArray3DCreate", 2000, false)                            \
  X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, false)                         \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, false)              \
  X(cuArrayDestroy, "cuArrayDestroy", 2000, false)                              \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, false)            \
  X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle", 4010, false)                      \
  X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle", 11000, false)                  \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010, false)                    \
  X(cuMemHostRegister, "cuMemHostRegister", 4000, false)                        \
  X(cuMemHostRegister_v2, "cuMemHostRegister", 6050, false)                     \
  X(cuMemHostUnregister, "cuMemHostUnregister", 4000, false)                    \
  X(cuImportExternalMemory, "cuImportExternalMemory", 10000, false)             \
  X(cuExternalMemoryGetMappedBuffer, "cuExternalMemoryGetMappedBuffer", 10000, false) \
  X(cuDestroyExternalMemory, "cuDestroyExternalMemory", 10000, false) \
  X(hipMalloc, "hipMalloc", 0, false) \
  X(hipExtMallocWithFlags, "hipExtMallocWithFlags", 0, false) \
  X(hipMallocManaged, "hipMallocManaged", 0, false) \
  X(hipMallocPitch, "hipMallocPitch", 0, false) \
  X(hipMemAllocPitch, "hipMemAllocPitch", 0, false) \
  X(hipMalloc3D, "hipMalloc3D", 0, false) \
  X(hipMallocArray, "hipMallocArray", 0, false) \
  X(hipMalloc3DArray, "hipMalloc3DArray", 0, false) \
  X(hipArrayCreate, "hipArrayCreate", 0, false) \
  X(hipArray3DCreate, "hipArray3DCreate", 0, false) \
  X(hipHostMalloc, "hipHostMalloc", 0, false) \
  X(hipHostAlloc, "hipHostAlloc", 0, false) \
  X(hipMallocHost, "hipMallocHost", 0, false) \
  X(hipMemAllocHost, "hipMemAllocHost", 0, false) \
  X(hipMallocAsync, "hipMallocAsync", 0, false) \
  X(hipMallocFromPoolAsync, "hipMallocFromPoolAsync", 0, false) \
  X(hipFreeAsync, "hipFreeAsync", 0, false) \
  X(hipMemPoolCreate, "hipMemPoolCreate", 0, false) \
  X(hipMemPoolDestroy, "hipMemPoolDestroy", 0, false) \
  X(hipMemCreate, "hipMemCreate", 0, false) \
  X(hipMemRelease, "hipMemRelease", 0, false) \
  X(hipMemAddressReserve, "hipMemAddressReserve", 0, false) \
  X(hipMemAddressFree, "hipMemAddressFree", 0, false) \
  X(hipMemMap, "hipMemMap", 0, false) \
  X(hipMemUnmap, "hipMemUnmap", 0, false) \
  X(hipMemRetainAllocationHandle, "hipMemRetainAllocationHandle", 0, false) \
  X(hipMemImportFromShareableHandle, "hipMemImportFromShareableHandle", 0, false) \
  X(hipHostRegister, "hipHostRegister", 0, false) \
  X(hipHostUnregister, "hipHostUnregister", 0, false) \
  X(hipIpcOpenMemHandle, "hipIpcOpenMemHandle", 0, false) \
  X(hipIpcCloseMemHandle, "hipIpcCloseMemHandle", 0, false) \
  X(hipFree, "hipFree", 0, false) \
  X(hipFreeArray, "hipFreeArray", 0, false) \
  X(hipArrayDestroy, "hipArrayDestroy", 0, false) \
  X(hipHostFree, "hipHostFree", 0, false) \
  X(hipFreeHost, "hipFreeHost", 0, false) \
  X(hipDeviceReset, "hipDeviceReset", 0, false)

enum class Hook : int {
#define LG_HOOK_ENUM(name, family, since, per_thread) name,
  LG_HOOKED_FUNCTIONS(LG_HOOK_ENUM)
#undef LG_HOOK_ENUM
      Count
};

inline constexpr int kHookCount = static_cast<int>(Hook::Count);

struct HookInfo {
  const char *name;
  const char *family;
  int since;
  bool per_thread;
  void *wrapper;  // leaseguard's exported function of that name
};

const HookInfo &hook_info(int index) noexcept;

// The hook whose name is exactly `name`, or -1. Allocation-free and lock-free: it runs on
// the dlsym path.
int find_hook(const char *name) noexcept;

// True if `function` is one of leaseguard's wrappers.
bool is_wrapper(const void *function) noexcept;

namespace detail {
// Each hook's real function once known (remember_real); null until then.
extern std::atomic<void *> g_real[kHookCount];
void *look_up_real_function(Hook hook) noexcept;
}  // namespace detail

// The driver's real function for a hook: remembered if known, else looked up with
// RTLD_NEXT (the next definition after the preload). May be null if no driver is loaded.
// Inline: every hooked call asks, and after the first it is one load.
inline void *real_function(Hook hook) noexcept {
  void *function = detail::g_real[static_cast<int>(hook)].load(std::memory_order_acquire);
  return function != nullptr ? function : detail::look_up_real_function(hook);
}
// Records `function` as the driver's implementation of `hook` unless one is known already.
void remember_real(int hook, void *function) noexcept;

template <typename Function>
Function real(Hook hook) noexcept {
  return reinterpret_cast<Function>(real_function(hook));
}

}  // namespace leaseguard::interpose
