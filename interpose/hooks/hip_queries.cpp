// Implementation of the HIP runtime queries.
#include "hip_queries.h"

#include <atomic>

#include "driver_queries.h"
#include "lg_hip.h"

namespace leaseguard::interpose {

int32_t hip_current_device(void *anchor) noexcept {
  static std::atomic<void *> get_device{nullptr};
  void *function = get_device.load(std::memory_order_acquire);
  if (function == nullptr) {
    function = driver_symbol(anchor, "hipGetDevice");
    if (function == nullptr) return -1;
    get_device.store(function, std::memory_order_release);
  }
  int device = -1;
  return reinterpret_cast<lg_pfn_hipGetDevice>(function)(&device) == hipSuccess ? device : -1;
}

}  // namespace leaseguard::interpose
