// Stable numeric ids for driver entry points, allocation kinds, lease endings and policies.
//
// The journal stores these numbers, so values are append-only: never renumber or reuse one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace leaseguard {

// X(name, id): every driver entry point the journal can name. Append only.
#define LG_API_IDS(X) \
  X(cuMemAlloc, 1) \
  X(cuMemAlloc_v2, 2) \
  X(cuMemAllocPitch, 3) \
  X(cuMemAllocPitch_v2, 4) \
  X(cuMemAllocManaged, 5) \
  X(cuMemAllocHost, 6) \
  X(cuMemAllocHost_v2, 7) \
  X(cuMemHostAlloc, 8) \
  X(cuMemAllocAsync, 9) \
  X(cuMemAllocAsync_ptsz, 10) \
  X(cuMemAllocFromPoolAsync, 11) \
  X(cuMemAllocFromPoolAsync_ptsz, 12) \
  X(cuMemFree, 13) \
  X(cuMemFree_v2, 14) \
  X(cuMemFreeHost, 15) \
  X(cuMemFreeAsync, 16) \
  X(cuMemFreeAsync_ptsz, 17) \
  X(cuCtxDestroy, 18) \
  X(cuCtxDestroy_v2, 19) \
  X(cuDevicePrimaryCtxRelease, 20) \
  X(cuDevicePrimaryCtxRelease_v2, 21) \
  X(cuDevicePrimaryCtxReset, 22) \
  X(cuDevicePrimaryCtxReset_v2, 23) \
  X(cuMemCreate, 24) \
  X(cuMemRelease, 25) \
  X(cuMemAddressReserve, 26) \
  X(cuMemAddressFree, 27) \
  X(cuMemRetainAllocationHandle, 28) \
  X(cuMemImportFromShareableHandle, 29) \
  X(cuMemPoolCreate, 30) \
  X(cuMemPoolDestroy, 31) \
  X(cuArrayCreate, 32) \
  X(cuArrayCreate_v2, 33) \
  X(cuArray3DCreate, 34) \
  X(cuArray3DCreate_v2, 35) \
  X(cuMipmappedArrayCreate, 36) \
  X(cuArrayDestroy, 37) \
  X(cuMipmappedArrayDestroy, 38) \
  X(cuIpcOpenMemHandle, 39) \
  X(cuIpcOpenMemHandle_v2, 40) \
  X(cuIpcCloseMemHandle, 41) \
  X(cuMemHostRegister, 42) \
  X(cuMemHostRegister_v2, 43) \
  X(cuMemHostUnregister, 44) \
  X(cuImportExternalMemory, 45) \
  X(cuExternalMemoryGetMappedBuffer, 46) \
  X(cuDestroyExternalMemory, 47) \
  X(hipMalloc, 48) \
  X(hipExtMallocWithFlags, 49) \
  X(hipMallocManaged, 50) \
  X(hipMallocPitch, 51) \
  X(hipMemAllocPitch, 52) \
  X(hipMalloc3D, 53) \
  X(hipMallocArray, 54) \
  X(hipMalloc3DArray, 55) \
  X(hipArrayCreate, 56) \
  X(hipArray3DCreate, 57) \
  X(hipHostMalloc, 58) \
  X(hipHostAlloc, 59) \
  X(hipMallocHost, 60) \
  X(hipMemAllocHost, 61) \
  X(hipMallocAsync, 62) \
  X(hipMallocFromPoolAsync, 63) \
  X(hipFreeAsync, 64) \
  X(hipMemPoolCreate, 65) \
  X(hipMemPoolDestroy, 66) \
  X(hipMemCreate, 67) \
  X(hipMemRelease, 68) \
  X(hipMemAddressReserve, 69) \
  X(hipMemAddressFree, 70) \
  X(hipMemRetainAllocationHandle, 71) \
  X(hipMemImportFromShareableHandle, 72) \
  X(hipHostRegister, 73) \
  X(hipHostUnregister, 74) \
  X(hipIpcOpenMemHandle, 75) \
  X(hipIpcCloseMemHandle, 76) \
  X(hipFree, 77) \
  X(hipFreeArray, 78) \
  X(hipArrayDestroy, 79) \
  X(hipHostFree, 80) \
  X(hipFreeHost, 81) \
  X(hipDeviceReset, 82)

enum class Api : uint16_t {
  Unknown = 0,
#define LG_API_ENUM(name, id) name = id,
  LG_API_IDS(LG_API_ENUM)
#undef LG_API_ENUM
  Count
};

// What an allocation is. `Ipc` is another process's memory opened here, `Registered` host
// memory pinned for the device, `External` memory imported from another API (the imported
// object or a buffer mapped from it), `Pool` a memory pool the program created.
enum class Kind : uint8_t { Device = 0, Pitched, Managed, Async, Host, Vmm, Array, Pool, Ipc, Registered, External, Count };

enum class EndedBy : uint8_t { Exit = 0, End, Expiry, ContextDestroy, Crash, Count };

enum class Policy : uint8_t { Report = 0, Reclaim = 1, Abort = 2, Count };

// The lease every process has: it begins with the process and ends at its exit.
inline constexpr uint32_t kProcessLeaseId = 1;

std::string_view api_name(Api api) noexcept;
std::optional<Api> api_from_name(std::string_view name) noexcept;
std::string_view kind_name(Kind kind) noexcept;
std::string_view ended_by_name(EndedBy ended_by) noexcept;
std::string_view policy_name(Policy policy) noexcept;
std::optional<Policy> policy_from_name(std::string_view name) noexcept;

}  // namespace leaseguard
