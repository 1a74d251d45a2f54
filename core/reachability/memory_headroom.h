// How much more memory this process can make resident before something acts on it: the
// kernel, once the machine runs short, or the memory limit of a cgroup the process is in
// (a container's, a Kubernetes pod's, a systemd unit's), whose OOM killer ends the process.
// leaseguard asks before work that takes memory the program never asked for (the
// reachability classification's arrays): a program running near its limit must never be
// killed by its leak checker.
#pragma once

#include <cstdint>
#include <string>

namespace leaseguard {

inline constexpr uint64_t kNoMemoryLimit = UINT64_MAX;

// The least of: the machine's available memory (MemAvailable in /proc/meminfo), and for each
// memory cgroup the process is in (the v2 hierarchy, v1's memory controller), at its own
// level and at each level above it that is mounted, the limit less the memory in use there
// (less its inactive file cache, which the kernel reclaims before it kills). kNoMemoryLimit
// where none can be read. `root` is prefixed to every path read: "" for this machine's, a
// directory laid out as / for tests.
uint64_t memory_headroom(const std::string &root = "") noexcept;

}  // namespace leaseguard
