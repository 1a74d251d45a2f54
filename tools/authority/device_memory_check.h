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

// The node's GPUs as NVML lists them (its indices, which ignore CUDA_VISIBLE_DEVICES), each
// with its UUID and the processes holding memory on it.
struct NodeGpu {
  unsigned index = 0;
  std::string uuid;              // "GPU-…", as dcgm-exporter's UUID label; "" if NVML would not say
  std::vector<HeldMemory> held;  // every process holding memory on it (HeldMemory::device: index)
};
struct NodeGpus {
  bool read = false;    // false: NVML could not be asked (`skipped` says why)
  bool failed = false;  // NVML is there but a question to it failed
  std::string skipped;
  std::vector<NodeGpu> gpus;
};
NodeGpus node_gpus();

}  // namespace leaseguard::authority
