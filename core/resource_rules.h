// What each entry point creates and destroys, as the drivers define it.
//
// One place for the rules the tracker (live) and the report (replay) both apply:
//   - which namespace a value lives in: device and host addresses share one, but a VMM
//     handle, an array, a pool or an external-memory object is an opaque value that may
//     equal some address, so each has its own;
//   - which free entry point releases what (cuMemFree does not close an IPC mapping; the
//     driver fails such a call and the allocation stays live);
//   - what a context destroy takes with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "api_ids.h"

namespace leaseguard {

enum class Space : uint8_t { Address = 0, VmmHandle, Array, Pool, ExternalMemory };

// The family an entry point belongs to: a create's, or the one a free releases.
enum class Family : uint8_t { DeviceMemory, HostMemory, Reservation, VmmHandle, Array, MipmappedArray, Pool, Ipc,
                              Registration, ExternalMemory, Other };

namespace detail {
extern const std::array<Space, static_cast<size_t>(Api::Count)> kSpaceOfApi;
extern const std::array<Family, static_cast<size_t>(Api::Count)> kFamilyOfApi;
}

// Inline, from a table, like space_of.
inline Family family_of(Api api) noexcept {
  const auto index = static_cast<size_t>(api);
  return index < static_cast<size_t>(Api::Count) ? detail::kFamilyOfApi[index] : Family::Other;
}

// The namespace of the value an allocating or freeing entry point names. Inline, from a
// table: every allocation and free asks, more than once.
inline Space space_of(Api api) noexcept {
  const auto index = static_cast<size_t>(api);
  return index < static_cast<size_t>(Api::Count) ? detail::kSpaceOfApi[index] : Space::Address;
}

// True if `free_api` releases something `alloc_api` created.
inline bool frees(Api free_api, Api alloc_api) noexcept {
  const Family family = family_of(free_api);
  return family != Family::Other && family == family_of(alloc_api);
}

// What HIP records carry as their context: HIP has none in its API, and hipDeviceReset frees
// everything on a device, so a device's allocations share one value per device.
constexpr uint64_t hip_device_token(int32_t device) noexcept {
  return 0x4849500000000000ull | static_cast<uint32_t>(device);  // "HIP" and the device
}

// True for the HIP runtime's entry points.
bool is_hip(Api api) noexcept;

// True if destroying the context an allocation was made in releases it (for HIP: resetting
// its device). VMM memory, pools,
// stream-ordered (pool) memory and imported external objects outlive their context.
bool dies_with_context(Api alloc_api, Kind kind) noexcept;

// True if the entry point may hand out the same value again while it is still live (a VMM
// handle retained or imported twice): each handout is its own reference, released once.
inline bool counts_references(Api alloc_api) noexcept { return family_of(alloc_api) == Family::VmmHandle; }

// True if the program, not the driver, chooses the value (the host buffer it registers): the
// same value coming back after leaseguard reclaimed it is the program's new allocation, not
// the driver reissuing a value whose late free is still to come.
bool program_chooses_value(Api alloc_api) noexcept;

// What an allocation is, in words for reports: "device memory", "VMM physical memory
// handle", "VMM reserved address range", "IPC mapping"...
const char *describe(Api alloc_api, Kind kind) noexcept;

}  // namespace leaseguard
