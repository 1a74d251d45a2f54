// What each entry point creates and destroys, as the drivers define it: the rules the
// tracker (live) and the report (replay) both apply, read from the table in entry_points.h.
//   - which namespace a value lives in: device and host addresses share one, but a VMM
//     handle, an array, a pool or an external-memory object is an opaque value that may
//     equal some address, so each has its own;
//   - which release frees what (a device-memory free does not close an IPC mapping; the
//     driver fails such a call and the allocation stays live);
//   - what the end of a context takes with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "api_ids.h"

namespace leaseguard {

enum class Space : uint8_t { Address = 0, VmmHandle, Array, Pool, ExternalMemory };

namespace detail {
constexpr Space space_of_family(Family family) noexcept {
  switch (family) {
    case Family::VmmHandle: return Space::VmmHandle;
    case Family::Array:
    case Family::MipmappedArray: return Space::Array;
    case Family::Pool: return Space::Pool;
    case Family::ExternalMemory: return Space::ExternalMemory;
    default: return Space::Address;
  }
}
// The table's family and space by id, laid out for one load each: every allocation and free
// asks, more than once.
struct Rules {
  Family family = Family::Other;
  Space space = Space::Address;
};
inline constexpr auto kRulesById = [] {
  std::array<Rules, static_cast<size_t>(Api::Count)> rules{};
  for (const EntryPoint &row : kEntryPoints)
    rules[static_cast<size_t>(row.api)] = Rules{row.family, space_of_family(row.family)};
  return rules;
}();
constexpr Rules rules_of(Api api) noexcept {
  const auto id = static_cast<size_t>(api);
  return id < kRulesById.size() ? kRulesById[id] : Rules{};
}
}  // namespace detail

inline Family family_of(Api api) noexcept { return detail::rules_of(api).family; }

inline Vendor vendor_of(Api api) noexcept {
  const EntryPoint *row = entry_point(api);
  return row != nullptr ? row->vendor : Vendor::Cuda;
}

// The namespace of the value an allocating or freeing entry point names.
inline Space space_of(Api api) noexcept { return detail::rules_of(api).space; }

// True if `free_api` releases something `alloc_api` created.
inline bool frees(Api free_api, Api alloc_api) noexcept {
  const Family family = family_of(free_api);
  return family != Family::Other && family == family_of(alloc_api);  // no allocation is of family Context
}

// What HIP records carry as their context: HIP has none in its API, and its device reset
// frees everything on a device, so a device's allocations share one value per device.
constexpr uint64_t hip_device_token(int32_t device) noexcept {
  return 0x4849500000000000ull | static_cast<uint32_t>(device);  // "HIP" and the device
}

// True if the end of the context an allocation was made in (for HIP: a reset of its
// device) releases it: the table's at_context_end, and never for stream-ordered memory of
// a CUDA context, which belongs to its pool whatever made it (a HIP device reset frees
// everything on the device). An id no row has (a damaged journal) is judged by its kind.
inline bool dies_with_context(Api alloc_api, Kind kind) noexcept {
  const EntryPoint *row = entry_point(alloc_api);
  if (row != nullptr && row->vendor == Vendor::Hip) return row->at_context_end == AtContextEnd::Dies;
  return kind != Kind::Async && (row == nullptr || row->at_context_end == AtContextEnd::Dies);
}

// True if the entry point may hand out the same value again while it is still live (a VMM
// handle retained or imported twice): each handout is its own reference, released once.
inline bool counts_references(Api alloc_api) noexcept { return family_of(alloc_api) == Family::VmmHandle; }

// True if the program, not the driver, chooses the value (the host buffer it registers): the
// same value coming back after leaseguard reclaimed it is the program's new allocation, not
// the driver reissuing a value whose late free is still to come.
inline bool program_chooses_value(Api alloc_api) noexcept { return family_of(alloc_api) == Family::Registration; }

// True if an allocation of `kind` takes device memory (what the node lease authority counts as
// a process's live bytes, and what its reclaim gave back): not host memory, pinned or
// registered, nor a pool or an IPC mapping (another process's memory).
constexpr bool holds_device_memory(Kind kind) noexcept {
  switch (kind) {
    case Kind::Device:
    case Kind::Pitched:
    case Kind::Managed:
    case Kind::Async:
    case Kind::Vmm:
    case Kind::Array:
    case Kind::External: return true;
    default: return false;
  }
}

// What an allocation is, in words for reports: "device memory", "VMM physical memory
// handle", "IPC mapping"... (the table's `what`; by kind for an id no row has).
const char *describe(Api alloc_api, Kind kind) noexcept;

}  // namespace leaseguard
