// Names for the ids in api_ids.h, as they appear in reports.
#include "api_ids.h"

#include <array>

namespace leaseguard {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(Api::Count)> kApiNames = {
    "unknown",
    "cuMemAlloc",
    "cuMemAlloc_v2",
    "cuMemAllocPitch",
    "cuMemAllocPitch_v2",
    "cuMemAllocManaged",
    "cuMemAllocHost",
    "cuMemAllocHost_v2",
    "cuMemHostAlloc",
    "cuMemAllocAsync",
    "cuMemAllocAsync_ptsz",
    "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync_ptsz",
    "cuMemFree",
    "cuMemFree_v2",
    "cuMemFreeHost",
    "cuMemFreeAsync",
    "cuMemFreeAsync_ptsz",
    "cuCtxDestroy",
    "cuCtxDestroy_v2",
    "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset",
    "cuDevicePrimaryCtxReset_v2",
};

constexpr std::array<std::string_view, static_cast<size_t>(Kind::Count)> kKindNames = {
    "device", "pitched", "managed", "async", "host", "vmm", "array"};

constexpr std::array<std::string_view, static_cast<size_t>(EndedBy::Count)> kEndedByNames = {
    "exit", "end", "expiry", "context_destroy", "crash"};

constexpr std::array<std::string_view, static_cast<size_t>(Policy::Count)> kPolicyNames = {
    "report", "reclaim", "abort"};

}  // namespace

std::string_view api_name(Api api) noexcept {
  auto index = static_cast<size_t>(api);
  return index < kApiNames.size() ? kApiNames[index] : kApiNames[0];
}

std::optional<Api> api_from_name(std::string_view name) noexcept {
  for (size_t i = 1; i < kApiNames.size(); ++i)
    if (kApiNames[i] == name) return static_cast<Api>(i);
  return std::nullopt;
}

std::string_view kind_name(Kind kind) noexcept {
  auto index = static_cast<size_t>(kind);
  return index < kKindNames.size() ? kKindNames[index] : "unknown";
}

std::string_view ended_by_name(EndedBy ended_by) noexcept {
  auto index = static_cast<size_t>(ended_by);
  return index < kEndedByNames.size() ? kEndedByNames[index] : "unknown";
}

std::string_view policy_name(Policy policy) noexcept {
  auto index = static_cast<size_t>(policy);
  return index < kPolicyNames.size() ? kPolicyNames[index] : "unknown";
}

std::optional<Policy> policy_from_name(std::string_view name) noexcept {
  for (size_t i = 0; i < kPolicyNames.size(); ++i)
    if (kPolicyNames[i] == name) return static_cast<Policy>(i);
  return std::nullopt;
}

}  // namespace leaseguard
