// Names for the ids in api_ids.h, as they appear in reports (entry points: the table's).
#include "api_ids.h"

#include <array>

namespace leaseguard {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(Kind::Count)> kKindNames = {
    "device", "pitched", "managed", "async", "host", "vmm", "array", "pool", "ipc", "registered", "external"};

constexpr std::array<std::string_view, static_cast<size_t>(EndedBy::Count)> kEndedByNames = {
    "exit", "end", "expiry", "context_destroy", "crash", "check"};

constexpr std::array<std::string_view, static_cast<size_t>(Policy::Count)> kPolicyNames = {"report", "reclaim",
                                                                                           "abort"};

}  // namespace

std::string_view api_name(Api api) noexcept {
  const EntryPoint *row = entry_point(api);
  return row != nullptr ? row->name : "unknown";
}

std::optional<Api> api_from_name(std::string_view name) noexcept {
  for (const EntryPoint &row : kEntryPoints)
    if (row.name == name) return row.api;
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
