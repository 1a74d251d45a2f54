#include "device_memory_check.h"

#include <dlfcn.h>

#include <algorithm>

#include "lg_nvml.h"

namespace leaseguard::authority {
namespace {

struct Nvml {
  PFN_nvmlDeviceGetCount_v2 count = nullptr;
  PFN_nvmlDeviceGetHandleByIndex_v2 handle = nullptr;
  PFN_nvmlDeviceGetComputeRunningProcesses_v3 processes = nullptr;
  PFN_nvmlErrorString error_string = nullptr;
  PFN_nvmlDeviceGetUUID uuid = nullptr;  // optional
  std::string unavailable;               // why it cannot be used; empty: it can
};

// Loaded and initialised once, for the daemon's life.
const Nvml &nvml() {
  static const Nvml loaded = [] {
    Nvml library;
    void *handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      library.unavailable = "NVML (libnvidia-ml.so.1) not found";
      return library;
    }
    auto init = reinterpret_cast<PFN_nvmlInit_v2>(dlsym(handle, "nvmlInit_v2"));
    library.count = reinterpret_cast<PFN_nvmlDeviceGetCount_v2>(dlsym(handle, "nvmlDeviceGetCount_v2"));
    library.handle =
        reinterpret_cast<PFN_nvmlDeviceGetHandleByIndex_v2>(dlsym(handle, "nvmlDeviceGetHandleByIndex_v2"));
    library.processes = reinterpret_cast<PFN_nvmlDeviceGetComputeRunningProcesses_v3>(
        dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v3"));
    library.error_string = reinterpret_cast<PFN_nvmlErrorString>(dlsym(handle, "nvmlErrorString"));
    library.uuid = reinterpret_cast<PFN_nvmlDeviceGetUUID>(dlsym(handle, "nvmlDeviceGetUUID"));
    if (init == nullptr || library.count == nullptr || library.handle == nullptr || library.processes == nullptr) {
      library.unavailable = "NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (a driver older than 470?)";
      return library;
    }
    if (const nvmlReturn_t status = init(); status != NVML_SUCCESS)
      library.unavailable = std::string("nvmlInit failed: ") +
                            (library.error_string != nullptr ? library.error_string(status) : std::to_string(status));
    return library;
  }();
  return loaded;
}

}  // namespace

NodeGpus node_gpus() {
  NodeGpus node;
  const Nvml &library = nvml();
  if (!library.unavailable.empty()) {
    node.skipped = library.unavailable;
    return node;
  }
  unsigned devices = 0;
  if (library.count(&devices) != NVML_SUCCESS) {
    node.skipped = "NVML could not count the devices";
    node.failed = true;
    return node;
  }
  for (unsigned index = 0; index < devices; ++index) {
    nvmlDevice_t device = nullptr;
    if (library.handle(index, &device) != NVML_SUCCESS) continue;
    std::vector<nvmlProcessInfo_t> infos(64);
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t status = library.processes(device, &count, infos.data());
    for (int attempt = 0; status == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 4; ++attempt) {
      infos.resize(count + 16);  // more may have started since
      count = static_cast<unsigned>(infos.size());
      status = library.processes(device, &count, infos.data());
    }
    if (status != NVML_SUCCESS) {
      node.skipped = "NVML could not list the processes of device " + std::to_string(index);
      node.failed = true;
      return node;
    }
    NodeGpu gpu;
    gpu.index = index;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (library.uuid != nullptr && library.uuid(device, uuid, sizeof uuid) == NVML_SUCCESS) gpu.uuid = uuid;
    for (unsigned i = 0; i < count; ++i)
      gpu.held.push_back({static_cast<pid_t>(infos[i].pid), index,
                          infos[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? UINT64_MAX : infos[i].usedGpuMemory});
    node.gpus.push_back(std::move(gpu));
  }
  node.read = true;
  return node;
}

DeviceMemoryCheck check_device_memory(const std::vector<pid_t> &pids) {
  DeviceMemoryCheck check;
  const NodeGpus node = node_gpus();
  if (!node.read) {
    check.skipped = node.skipped;
    return check;
  }
  for (const NodeGpu &gpu : node.gpus)
    for (const HeldMemory &held : gpu.held)
      if (std::find(pids.begin(), pids.end(), held.pid) != pids.end()) check.held.push_back(held);
  check.checked = true;
  return check;
}

}  // namespace leaseguard::authority
