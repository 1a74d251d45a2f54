// Stable numeric ids the journal stores: entry points and allocation kinds (from the table
// in entry_points.h), lease endings and policies. Values are append-only: never renumber or
// reuse one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "entry_points.h"

namespace leaseguard {

// Check is the report's, never a journal's: what a live check found lost in a lease that has
// not ended (the report of a running process).
enum class EndedBy : uint8_t { Exit = 0, End, Expiry, ContextDestroy, Crash, Check, Count };

enum class Policy : uint8_t { Report = 0, Reclaim = 1, Abort = 2, Count };

// The lease every process has: it begins with the process and ends at its exit.
inline constexpr uint32_t kProcessLeaseId = 1;

std::string_view api_name(Api api) noexcept;
// The entry point a journal or a report names by number; Api::Unknown for a number no row
// of the table has (a damaged or newer journal).
constexpr Api api_from_wire(uint16_t id) noexcept {
  return entry_point(static_cast<Api>(id)) != nullptr ? static_cast<Api>(id) : Api::Unknown;
}
std::optional<Api> api_from_name(std::string_view name) noexcept;
std::string_view kind_name(Kind kind) noexcept;
std::string_view ended_by_name(EndedBy ended_by) noexcept;
std::string_view policy_name(Policy policy) noexcept;
std::optional<Policy> policy_from_name(std::string_view name) noexcept;

}  // namespace leaseguard
