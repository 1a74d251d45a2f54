// What a process holds on each simulated device, published for other processes to read, as
// the real driver's accounting is read through NVML (nvidia-smi, a lease authority's
// verification). Each process that allocates device memory keeps one small file, mapped
// shared, in the usage directory; the simulator's libnvidia-ml.so.1 (sim_nvml.cpp) reads the
// files of processes that still run. A process that ended holds nothing, whatever its file
// says: the kernel took its memory with it, as the real driver frees an ended process's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace leaseguard::sim {

inline constexpr int kUsageDevices = 16;
inline constexpr int kUsageRows = 32;  // one a driver shard (DriverLock::kShards)
inline constexpr char kUsageMagic[8] = {'L', 'G', 'S', 'I', 'M', 'U', 'S', '2'};

// The file's layout. What a process holds on a device is the sum of its rows: each driver
// shard counts in its own, on lines of its own, so threads allocating at once do not write
// one counter. Counters are signed: a process forked from another starts at zero and may
// free what it inherited, and a row may count frees of what another row counted (readers
// take a negative sum as zero).
struct UsagePage {
  char magic[8];
  int32_t pid;
  uint32_t reserved;
  uint64_t start_time;  // /proc/PID/stat field 22: with the pid, which process wrote it
  alignas(64) int64_t bytes[kUsageRows][kUsageDevices];
};

// What the page's process holds on `device`.
int64_t held_on(const UsagePage &page, int device);

// LEASEGUARD_SIM_USAGE_DIR, else /tmp/leaseguard-sim-usage-UID.
std::string usage_directory();

// Adds `delta` bytes to what this process holds on `device`, in row `row` (modulo
// kUsageRows; devices past kUsageDevices are not published). Safe under the caller's lock;
// the first call makes the file.
void publish_usage(size_t row, int device, int64_t delta) noexcept;

// The start time of process `pid` (0 if it does not run, or has ended and waits to be reaped).
uint64_t running_start_time(pid_t pid);

}  // namespace leaseguard::sim
