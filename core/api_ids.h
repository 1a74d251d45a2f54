// Stable numeric ids for driver entry points, allocation kinds, lease endings and policies.
//
// The journal stores these numbers, so values are append-only: never renumber or reuse one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace leaseguard {

enum class Api : uint16_t {
  Unknown = 0,
  cuMemAlloc = 1,
  cuMemAlloc_v2 = 2,
  cuMemAllocPitch = 3,
  cuMemAllocPitch_v2 = 4,
  cuMemAllocManaged = 5,
  cuMemAllocHost = 6,
  cuMemAllocHost_v2 = 7,
  cuMemHostAlloc = 8,
  cuMemAllocAsync = 9,
  cuMemAllocAsync_ptsz = 10,
  cuMemAllocFromPoolAsync = 11,
  cuMemAllocFromPoolAsync_ptsz = 12,
  cuMemFree = 13,
  cuMemFree_v2 = 14,
  cuMemFreeHost = 15,
  cuMemFreeAsync = 16,
  cuMemFreeAsync_ptsz = 17,
  cuCtxDestroy = 18,
  cuCtxDestroy_v2 = 19,
  cuDevicePrimaryCtxRelease = 20,
  cuDevicePrimaryCtxRelease_v2 = 21,
  cuDevicePrimaryCtxReset = 22,
  cuDevicePrimaryCtxReset_v2 = 23,
  Count
};

enum class Kind : uint8_t { Device = 0, Pitched, Managed, Async, Host, Vmm, Array, Count };

enum class EndedBy : uint8_t { Exit = 0, End, Expiry, ContextDestroy, Crash, Count };

enum class Policy : uint8_t { Report = 0, Reclaim = 1, Abort = 2, Count };

std::string_view api_name(Api api) noexcept;
std::optional<Api> api_from_name(std::string_view name) noexcept;
std::string_view kind_name(Kind kind) noexcept;
std::string_view ended_by_name(EndedBy ended_by) noexcept;
std::string_view policy_name(Policy policy) noexcept;
std::optional<Policy> policy_from_name(std::string_view name) noexcept;

}  // namespace leaseguard
