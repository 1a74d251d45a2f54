// The verify stage's question to the device: does any of these processes still hold device
// memory? Asked through NVML (libnvidia-ml.so.1, loaded at run time: the daemon runs on
// machines without a GPU or a driver too, and then says the check was skipped).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace leaseguard::authority {

struct HeldMemory {
  pid_t pid = 0;
  unsigned device = 0;
  uint64_t bytes = 0;  // UINT64_MAX: the driver would not say how much
};

struct DeviceMemoryCheck {
  bool checked = false;  // false: NVML could not be asked (`skipped` says why)
  std::string skipped;
  std::vector<HeldMemory> held;  // what the processes still hold, per device
};

DeviceMemoryCheck check_device_memory(const std::vector<pid_t> &pids);

}  // namespace leaseguard::authority
