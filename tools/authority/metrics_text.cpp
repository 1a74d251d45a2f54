#include "metrics_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

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

std::string render_metrics(const MetricsSnapshot &snapshot) {
  std::string out;
  family(out, "leaseguard_leases_active", "gauge", "Leases granted by the daemon and not yet ended.");
  out += "leaseguard_leases_active " + number(static_cast<uint64_t>(snapshot.leases.size())) + "\n";

  family(out, "leaseguard_processes_registered", "gauge", "Processes of live leases known to the daemon.");
  out += "leaseguard_processes_registered " + number(static_cast<uint64_t>(snapshot.processes_registered)) + "\n";

  family(out, "leaseguard_lease_live_bytes", "gauge",
         "Device memory a process of a live lease holds, per device, as its journal says.");
  std::map<int, uint64_t> node_bytes;
  for (const LeaseMetrics &lease : snapshot.leases)
    for (const ProcessDeviceBytes &live : lease.live) {
      out += "leaseguard_lease_live_bytes{" + lease_labels(lease) + ",pid=\"" + std::to_string(live.pid) +
             "\",device=\"" + std::to_string(live.device) + "\"} " + number(live.bytes) + "\n";
      node_bytes[live.device] += live.bytes;
    }

  family(out, "leaseguard_node_live_bytes", "gauge", "Device memory all live leases hold, per device.");
  for (const auto &[device, bytes] : node_bytes)
    out += "leaseguard_node_live_bytes{device=\"" + std::to_string(device) + "\"} " + number(bytes) + "\n";

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

  family(out, "leaseguard_teardown_stage_total", "counter", "Teardown stages begun, per stage.");
  for (const auto &[stage, count] : snapshot.teardown_stages)
    out += "leaseguard_teardown_stage_total{stage=\"" + escape_label_value(stage) + "\"} " + number(count) + "\n";

  family(out, "leaseguard_leaked_bytes_total", "counter", "Device memory ended leases left live when they ended.");
  out += "leaseguard_leaked_bytes_total " + number(snapshot.leaked_bytes_total) + "\n";
  family(out, "leaseguard_reclaimed_bytes_total", "counter",
         "Device memory the processes of ending leases gave back when the reclaim stage asked.");
  out += "leaseguard_reclaimed_bytes_total " + number(snapshot.reclaimed_bytes_total) + "\n";
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
