// Questions the HIP hooks ask the real runtime, looked up in the object that holds the
// hooked function (the "anchor"), never through the global scope.
#pragma once

#include <cstdint>

#include "resource_rules.h"

namespace leaseguard::interpose {

// The calling thread's current HIP device, or -1 if the runtime cannot say.
int32_t hip_current_device(void *anchor) noexcept;

using leaseguard::hip_device_token;  // core/base/resource_rules.h

}  // namespace leaseguard::interpose
