// The simulator's libnvidia-ml.so.1: what each running process holds on each simulated
// device, from the accounting the simulated driver publishes (sim_usage.h), through the
// entry points a lease authority and monitoring tools call. Like the real library it knows
// nothing of leaseguard; unlike it, it has no device of its own to ask, only the processes'
// published counts.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lg_nvml.h"
#include "sim_usage.h"
#include "sim_visible_devices.h"

namespace {

using namespace leaseguard::sim;

bool g_initialized = false;
int g_device_count = 1;

// A handle is its device index + 1 (never null).
nvmlDevice_t handle_of(int index) { return reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(index) + 1); }
int index_of(nvmlDevice_t device) { return static_cast<int>(reinterpret_cast<uintptr_t>(device)) - 1; }

// The published pages of processes that still run.
std::vector<UsagePage> running_processes() {
  std::vector<UsagePage> pages;
  const std::string directory = usage_directory();
  DIR *listing = opendir(directory.c_str());
  if (listing == nullptr) return pages;
  while (const dirent *entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.size() < 7 || name.compare(name.size() - 6, 6, ".usage") != 0) continue;
    const int fd = open((directory + "/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    UsagePage page{};
    const bool whole = read(fd, &page, sizeof page) == static_cast<ssize_t>(sizeof page);
    close(fd);
    if (!whole || std::memcmp(page.magic, kUsageMagic, sizeof page.magic) != 0) continue;
    // An ended process holds nothing (its pid may run another program now).
    if (page.start_time == 0 || running_start_time(page.pid) != page.start_time) continue;
    pages.push_back(page);
  }
  closedir(listing);
  return pages;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  const char *devices = std::getenv("LEASEGUARD_SIM_DEVICES");
  const int count = devices != nullptr ? std::atoi(devices) : 1;
  g_device_count = count >= 1 && count <= kUsageDevices ? count : 1;
  g_initialized = true;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  g_initialized = false;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(g_device_count);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                                  nvmlDevice_t *device) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= static_cast<unsigned int>(g_device_count)) return NVML_ERROR_INVALID_ARGUMENT;
  *device = handle_of(static_cast<int>(index));
  return NVML_SUCCESS;
}

// Processes with memory on the device, as the real library lists compute processes: with
// too small a buffer, how many there are and NVML_ERROR_INSUFFICIENT_SIZE.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                                            unsigned int *count,
                                                                                            nvmlProcessInfo_t *infos) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  const int index = index_of(device);
  if (count == nullptr || index < 0 || index >= g_device_count) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<nvmlProcessInfo_t> holding;
  for (const UsagePage &page : running_processes())
    if (const int64_t held = held_on(page, index); held > 0)
      holding.push_back({static_cast<unsigned int>(page.pid), static_cast<unsigned long long>(held), 0, 0});
  const unsigned int room = *count;
  *count = static_cast<unsigned int>(holding.size());
  if (holding.size() > room) return NVML_ERROR_INSUFFICIENT_SIZE;
  if (!holding.empty() && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < holding.size(); ++i) infos[i] = holding[i];
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                                            unsigned int *count,
                                                                                            nvmlProcessInfo_t *infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}

// "GPU-" and the UUID's hex digits, as cuDeviceGetUuid gives its bytes (sim_visible_devices.h).
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
                                                                      unsigned int length) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  const int index = index_of(device);
  if (uuid == nullptr || index < 0 || index >= g_device_count) return NVML_ERROR_INVALID_ARGUMENT;
  const std::string text = gpu_uuid_text(index);
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(uuid, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

}  // extern "C"
