// The drivers' allocation rules (see resource_rules.h).
#include "resource_rules.h"

#include <array>

namespace leaseguard {
namespace {

constexpr Family family_by_switch(Api api) noexcept {
  switch (api) {
    case Api::cuMemAlloc: case Api::cuMemAlloc_v2: case Api::cuMemAllocPitch: case Api::cuMemAllocPitch_v2:
    case Api::cuMemAllocManaged: case Api::cuMemAllocAsync: case Api::cuMemAllocAsync_ptsz:
    case Api::cuMemAllocFromPoolAsync: case Api::cuMemAllocFromPoolAsync_ptsz:
    case Api::cuExternalMemoryGetMappedBuffer:  // mapped buffers are freed with cuMemFree
    case Api::cuMemFree: case Api::cuMemFree_v2: case Api::cuMemFreeAsync: case Api::cuMemFreeAsync_ptsz:
    case Api::hipMalloc: case Api::hipExtMallocWithFlags: case Api::hipMallocManaged: case Api::hipMallocPitch:
    case Api::hipMemAllocPitch: case Api::hipMalloc3D: case Api::hipMallocAsync: case Api::hipMallocFromPoolAsync:
    case Api::hipFree: case Api::hipFreeAsync:
      return Family::DeviceMemory;
    case Api::cuMemAllocHost: case Api::cuMemAllocHost_v2: case Api::cuMemHostAlloc: case Api::cuMemFreeHost:
    case Api::hipHostMalloc: case Api::hipHostAlloc: case Api::hipMallocHost: case Api::hipMemAllocHost:
    case Api::hipHostFree: case Api::hipFreeHost:
      return Family::HostMemory;
    case Api::cuMemAddressReserve: case Api::cuMemAddressFree:
    case Api::hipMemAddressReserve: case Api::hipMemAddressFree:
      return Family::Reservation;
    case Api::cuMemCreate: case Api::cuMemRetainAllocationHandle: case Api::cuMemImportFromShareableHandle:
    case Api::cuMemRelease:
    case Api::hipMemCreate: case Api::hipMemRetainAllocationHandle: case Api::hipMemImportFromShareableHandle:
    case Api::hipMemRelease:
      return Family::VmmHandle;
    case Api::cuArrayCreate: case Api::cuArrayCreate_v2: case Api::cuArray3DCreate: case Api::cuArray3DCreate_v2:
    case Api::cuArrayDestroy:
    case Api::hipMallocArray: case Api::hipMalloc3DArray: case Api::hipArrayCreate: case Api::hipArray3DCreate:
    case Api::hipFreeArray: case Api::hipArrayDestroy:
      return Family::Array;
    case Api::cuMipmappedArrayCreate: case Api::cuMipmappedArrayDestroy:
      return Family::MipmappedArray;
    case Api::cuMemPoolCreate: case Api::cuMemPoolDestroy:
    case Api::hipMemPoolCreate: case Api::hipMemPoolDestroy:
      return Family::Pool;
    case Api::cuIpcOpenMemHandle: case Api::cuIpcOpenMemHandle_v2: case Api::cuIpcCloseMemHandle:
    case Api::hipIpcOpenMemHandle: case Api::hipIpcCloseMemHandle:
      return Family::Ipc;
    case Api::cuMemHostRegister: case Api::cuMemHostRegister_v2: case Api::cuMemHostUnregister:
    case Api::hipHostRegister: case Api::hipHostUnregister:
      return Family::Registration;
    case Api::cuImportExternalMemory: case Api::cuDestroyExternalMemory:
      return Family::ExternalMemory;
    default:
      return Family::Other;
  }
}

// The same as a table, built at compile time: every allocation and free asks, several times.
constexpr auto kFamilies = [] {
  std::array<Family, static_cast<size_t>(Api::Count)> families{};
  for (size_t i = 0; i < families.size(); ++i) families[i] = family_by_switch(static_cast<Api>(i));
  return families;
}();

}  // namespace

const std::array<Family, static_cast<size_t>(Api::Count)> detail::kFamilyOfApi = kFamilies;

namespace {

constexpr Space space_by_family(Family family) noexcept {
  switch (family) {
    case Family::VmmHandle: return Space::VmmHandle;
    case Family::Array: case Family::MipmappedArray: return Space::Array;
    case Family::Pool: return Space::Pool;
    case Family::ExternalMemory: return Space::ExternalMemory;
    default: return Space::Address;
  }
}

}  // namespace

const std::array<Space, static_cast<size_t>(Api::Count)> detail::kSpaceOfApi = [] {
  std::array<Space, static_cast<size_t>(Api::Count)> spaces{};
  for (size_t i = 0; i < spaces.size(); ++i) spaces[i] = space_by_family(kFamilies[i]);
  return spaces;
}();

bool is_hip(Api api) noexcept { return api >= Api::hipMalloc && api <= Api::hipDeviceReset; }

bool dies_with_context(Api alloc_api, Kind kind) noexcept {
  if (is_hip(alloc_api)) return true;     // hipDeviceReset destroys everything on the device
  if (kind == Kind::Async) return false;  // pool memory belongs to the pool
  switch (family_of(alloc_api)) {
    case Family::Reservation: case Family::VmmHandle: case Family::Pool: case Family::ExternalMemory:
      return false;
    default:
      return true;
  }
}

const char *describe(Api alloc_api, Kind kind) noexcept {
  switch (kind) {
    case Kind::Device: return "device memory";
    case Kind::Pitched: return "pitched device memory";
    case Kind::Managed: return "managed memory";
    case Kind::Async: return "stream-ordered memory";
    case Kind::Host: return "pinned host memory";
    case Kind::Vmm:
      if (alloc_api == Api::cuMemAddressReserve || alloc_api == Api::hipMemAddressReserve)
        return "VMM reserved address range";
      if (alloc_api == Api::cuMemCreate || alloc_api == Api::hipMemCreate) return "VMM physical memory handle";
      return "VMM handle reference";
    case Kind::Array: return alloc_api == Api::cuMipmappedArrayCreate ? "mipmapped array" : "array";
    case Kind::Pool: return "memory pool";
    case Kind::Ipc: return "IPC mapping";
    case Kind::Registered: return "host memory registration";
    case Kind::External:
      return alloc_api == Api::cuExternalMemoryGetMappedBuffer ? "buffer mapped from external memory"
                                                               : "imported external memory";
    default: return "allocation";
  }
}

bool program_chooses_value(Api alloc_api) noexcept { return family_of(alloc_api) == Family::Registration; }


}  // namespace leaseguard
