// The daemon's state in the Prometheus text exposition format (version 0.0.4), for its
// /metrics endpoint and for node_exporter's textfile collector.
//
// Label cardinality stays bounded: per-lease and per-process series exist only while their
// lease is live, and what ended leases leave behind is folded into node-wide counters.
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
  int device = 0;
  uint64_t bytes = 0;
};

struct LeaseMetrics {
  std::string name;
  uint64_t id = 0;
  std::optional<double> ttl_remaining_seconds;  // none: the lease has no TTL
  std::vector<ProcessDeviceBytes> live;         // one entry per process and device holding memory
  // What its processes' last live checks found lost, summed; none: no process was checked.
  std::optional<uint64_t> lost_bytes_at_last_check;
};

struct MetricsSnapshot {
  std::vector<LeaseMetrics> leases;  // live leases only
  size_t processes_registered = 0;
  std::map<std::string, uint64_t> teardown_stages;  // stage name -> times it began, since the daemon's first start
  uint64_t leaked_bytes_total = 0;                  // left live by ended leases
  uint64_t reclaimed_bytes_total = 0;               // given back by their processes when asked
};

// The exposition text; the metric names are part of the contract (contract.md).
std::string render_metrics(const MetricsSnapshot &snapshot);

// A label value as the format wants it: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

// Writes `text` to `path` as node_exporter's textfile collector needs: whole or not at all
// (a temporary file in the same directory, renamed over it).
bool write_textfile(const std::string &path, const std::string &text, std::string &error);

}  // namespace leaseguard::authority
