// The daemon's state in the Prometheus text exposition format (version 0.0.4), for its
// /metrics endpoint and for node_exporter's textfile collector.
//
// Label cardinality stays bounded: per-lease and per-process series exist only while their
// lease is live, and for the kRecentlyEndedLeases that ended last; what ended leases leave
// behind is folded into node-wide counters.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leaseguard::authority {

struct ProcessDeviceBytes {
  pid_t pid = 0;
  int device = 0;  // the process's ordinal (its CUDA_VISIBLE_DEVICES decides which GPU it is)
  uint64_t bytes = 0;
  std::string uuid;  // the GPU's, as the process's driver named it; "" if it did not
};

// A GPU of the node as NVML sees it, with the device memory of processes in no live lease.
struct NodeGpuMetrics {
  unsigned index = 0;  // NVML's
  std::string uuid;
  uint64_t unaccounted_bytes = 0;
  uint64_t unaccounted_processes = 0;
};

struct LeaseMetrics {
  std::string name;
  uint64_t id = 0;
  std::optional<double> ttl_remaining_seconds;  // none: the lease has no TTL
  std::vector<ProcessDeviceBytes> live;         // one entry per process and device holding memory
  // What its processes' last live checks found lost, summed; none: no process was checked.
  std::optional<uint64_t> lost_bytes_at_last_check;
};

// A lease that ended: what it lost (direct, indirect, unchecked) and still held on purpose.
struct EndedLeaseMetrics {
  std::string name;
  uint64_t id = 0;
  uint64_t lost_bytes = 0;
  uint64_t reachable_bytes = 0;
};
// How many ended leases keep series of their own (the most recent): the bound on the lease
// label's values beside the live leases'.
constexpr size_t kRecentlyEndedLeases = 16;

struct MetricsSnapshot {
  std::vector<LeaseMetrics> leases;  // live leases only
  size_t processes_registered = 0;
  std::map<std::string, uint64_t> teardown_stages;  // stage name -> times it began, since the daemon's start
  uint64_t lost_bytes_total = 0;                    // what ended leases lost, reclaimed or not
  uint64_t reachable_at_end_bytes_total = 0;        // what they still held on purpose
  uint64_t reclaimed_bytes_total = 0;               // given back by their processes when asked
  std::vector<EndedLeaseMetrics> recently_ended;    // at most kRecentlyEndedLeases, oldest first
  std::optional<std::vector<NodeGpuMetrics>> gpus;  // none: NVML could not be asked
  // Whether every live lease's journals and NVML (where it is there) could be read for this
  // snapshot; and when it was made, in seconds since the epoch.
  bool complete = true;
  double made_at_seconds = 0;
};

// The exposition text; the metric names are part of the contract (contract.md).
std::string render_metrics(const MetricsSnapshot &snapshot);

// A label value as the format wants it: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

// Writes `text` to `path` as node_exporter's textfile collector needs: whole or not at all
// (a temporary file in the same directory, renamed over it).
bool write_textfile(const std::string &path, const std::string &text, std::string &error);

}  // namespace leaseguard::authority
