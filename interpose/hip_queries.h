// Questions the HIP hooks ask the real runtime, looked up in the object that holds the
// hooked function (the "anchor"), never through the global scope.
#pragma once

#include <cstdint>

namespace leaseguard::interpose {

// The calling thread's current HIP device, or -1 if the runtime cannot say.
int32_t hip_current_device(void *anchor) noexcept;

// What HIP records carry as their context: HIP has none in its API, and hipDeviceReset frees
// everything on a device, so a device's allocations share one value per device.
constexpr uint64_t hip_device_token(int32_t device) noexcept {
  return 0x4849500000000000ull | static_cast<uint32_t>(device);  // "HIP" and the device
}

}  // namespace leaseguard::interpose
