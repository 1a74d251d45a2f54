#include "metrics_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "files.h"

namespace leaseguard::authority {
namespace {

void family(std::string &out, const char *name, const char *type, const char *help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

std::string number(uint64_t value) { return std::to_string(value); }

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  return buffer;
}

std::string lease_labels(const LeaseMetrics &lease) {
  return "lease=\"" + escape_label_value(lease.name) + "\",id=\"" + std::to_string(lease.id) + "\"";
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '"') escaped += "\\\"";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

namespace {

// The update itself, the leases and the processes counted.
void write_update(std::string &out, const MetricsSnapshot &snapshot) {
  family(out, "leaseguard_metrics_update_success", "gauge",
         "1 if this update read every live lease's journals and NVML (where it is there), else 0.");
  out += "leaseguard_metrics_update_success " + number(static_cast<uint64_t>(snapshot.complete ? 1 : 0)) + "\n";
  family(out, "leaseguard_metrics_last_update_timestamp_seconds", "gauge",
         "When this update was made, in seconds since the epoch.");
  out += "leaseguard_metrics_last_update_timestamp_seconds " + number(snapshot.made_at_seconds) + "\n";

  family(out, "leaseguard_leases_active", "gauge", "Leases granted by the daemon and not yet ended.");
  out += "leaseguard_leases_active " + number(static_cast<uint64_t>(snapshot.leases.size())) + "\n";

  family(out, "leaseguard_processes_registered", "gauge", "Processes of live leases known to the daemon.");
  out += "leaseguard_processes_registered " + number(static_cast<uint64_t>(snapshot.processes_registered)) + "\n";
}

// What live leases' processes hold, per process and per GPU.
void write_live_bytes(std::string &out, const MetricsSnapshot &snapshot) {
  family(out, "leaseguard_lease_live_bytes", "gauge",
         "Device memory a process of a live lease holds, per device (the process's ordinal) and GPU (its UUID, "
         "as dcgm-exporter's UUID label), as its journal says.");
  // Node-wide per GPU: by UUID where the processes' drivers named it (ordinals differ between
  // processes whose CUDA_VISIBLE_DEVICES differ), by ordinal where they did not.
  std::map<std::pair<std::string, int>, uint64_t> node_bytes;
  for (const LeaseMetrics &lease : snapshot.leases)
    for (const ProcessDeviceBytes &live : lease.live) {
      out += "leaseguard_lease_live_bytes{" + lease_labels(lease) + ",pid=\"" + std::to_string(live.pid) +
             "\",device=\"" + std::to_string(live.device) + "\",uuid=\"" + escape_label_value(live.uuid) + "\"} " +
             number(live.bytes) + "\n";
      node_bytes[{live.uuid, live.uuid.empty() ? live.device : -1}] += live.bytes;
    }

  family(out, "leaseguard_node_live_bytes", "gauge",
         "Device memory all live leases hold, per GPU: device is NVML's index where the GPU's UUID is known to it, "
         "else the processes' ordinal.");
  for (const auto &[gpu, bytes] : node_bytes) {
    std::string device = gpu.second >= 0 ? std::to_string(gpu.second) : "";
    if (snapshot.gpus)
      for (const NodeGpuMetrics &known : *snapshot.gpus)
        if (!gpu.first.empty() && known.uuid == gpu.first) device = std::to_string(known.index);
    out += "leaseguard_node_live_bytes{device=\"" + device + "\",uuid=\"" + escape_label_value(gpu.first) + "\"} " +
           number(bytes) + "\n";
  }
}

// What NVML says processes in no live lease hold.
void write_unaccounted(std::string &out, const MetricsSnapshot &snapshot) {
  family(out, "leaseguard_unaccounted_bytes", "gauge",
         "Device memory NVML says processes in no live lease hold, per GPU (NVML's index and UUID).");
  family(out, "leaseguard_unaccounted_processes", "gauge",
         "Processes in no live lease that hold device memory, per GPU, as NVML lists them.");
  if (snapshot.gpus) {
    for (const NodeGpuMetrics &gpu : *snapshot.gpus)
      out += "leaseguard_unaccounted_bytes{device=\"" + std::to_string(gpu.index) + "\",uuid=\"" +
             escape_label_value(gpu.uuid) + "\"} " + number(gpu.unaccounted_bytes) + "\n";
    for (const NodeGpuMetrics &gpu : *snapshot.gpus)
      out += "leaseguard_unaccounted_processes{device=\"" + std::to_string(gpu.index) + "\",uuid=\"" +
             escape_label_value(gpu.uuid) + "\"} " + number(gpu.unaccounted_processes) + "\n";
  }
}

// Each live lease's last checks and time left.
void write_lease_gauges(std::string &out, const MetricsSnapshot &snapshot) {
  family(out, "leaseguard_lease_lost_bytes", "gauge",
         "Device memory the last live check of each process of a live lease found lost, summed per lease; "
         "leases none of whose processes was checked have no series.");
  for (const LeaseMetrics &lease : snapshot.leases)
    if (lease.lost_bytes_at_last_check)
      out +=
          "leaseguard_lease_lost_bytes{" + lease_labels(lease) + "} " + number(*lease.lost_bytes_at_last_check) + "\n";

  family(out, "leaseguard_lease_ttl_remaining_seconds", "gauge",
         "Time left before a live lease ends; leases without a TTL have no series.");
  for (const LeaseMetrics &lease : snapshot.leases)
    if (lease.ttl_remaining_seconds)
      out += "leaseguard_lease_ttl_remaining_seconds{" + lease_labels(lease) + "} " +
             number(*lease.ttl_remaining_seconds) + "\n";
}

// What ended leases lost, held and gave back, and their teardowns.
void write_endings(std::string &out, const MetricsSnapshot &snapshot) {
  family(out, "leaseguard_teardown_stage_total", "counter", "Teardown stages begun, per stage.");
  for (const auto &[stage, count] : snapshot.teardown_stages)
    out += "leaseguard_teardown_stage_total{stage=\"" + escape_label_value(stage) + "\"} " + number(count) + "\n";

  family(out, "leaseguard_leaked_bytes_total", "counter",
         "Device memory ended leases lost (direct, indirect and unchecked leaks), whether the teardown then "
         "reclaimed it or not; never what they still held on purpose.");
  out += "leaseguard_leaked_bytes_total " + number(snapshot.lost_bytes_total) + "\n";
  family(out, "leaseguard_reachable_at_end_bytes_total", "counter",
         "Device memory ended leases still held on purpose (reachable) when they ended.");
  out += "leaseguard_reachable_at_end_bytes_total " + number(snapshot.reachable_at_end_bytes_total) + "\n";
  const std::string bound = std::to_string(kRecentlyEndedLeases);
  family(out, "leaseguard_ended_lease_lost_bytes", "gauge",
         ("Device memory each of the leases that ended last lost (the " + bound + " most recent).").c_str());
  for (const EndedLeaseMetrics &ended : snapshot.recently_ended)
    out += "leaseguard_ended_lease_lost_bytes{lease=\"" + escape_label_value(ended.name) + "\",id=\"" +
           std::to_string(ended.id) + "\"} " + number(ended.lost_bytes) + "\n";
  family(out, "leaseguard_ended_lease_reachable_bytes", "gauge",
         ("Device memory each of the leases that ended last still held on purpose (the " + bound + " most recent).")
             .c_str());
  for (const EndedLeaseMetrics &ended : snapshot.recently_ended)
    out += "leaseguard_ended_lease_reachable_bytes{lease=\"" + escape_label_value(ended.name) + "\",id=\"" +
           std::to_string(ended.id) + "\"} " + number(ended.reachable_bytes) + "\n";
  family(out, "leaseguard_reclaimed_bytes_total", "counter",
         "Device memory the processes of ending leases gave back when the reclaim stage asked.");
  out += "leaseguard_reclaimed_bytes_total " + number(snapshot.reclaimed_bytes_total) + "\n";
}

}  // namespace

std::string render_metrics(const MetricsSnapshot &snapshot) {
  std::string out;
  write_update(out, snapshot);
  write_live_bytes(out, snapshot);
  write_unaccounted(out, snapshot);
  write_lease_gauges(out, snapshot);
  write_endings(out, snapshot);
  return out;
}

bool write_textfile(const std::string &path, const std::string &text, std::string &error) {
  // node_exporter reads every *.prom file: the temporary name must not end so.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write " + temporary + ": " + std::strerror(errno);
    return false;
  }
  bool ok = write_all(fd, text);
  ok = close(fd) == 0 && ok;
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace leaseguard::authority
