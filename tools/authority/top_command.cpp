#include "top_command.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "authority_protocol.h"
#include "authority_socket.h"
#include "live_bytes.h"
#include "process_table.h"
#include "files.h"
#include "growing_sites.h"
#include "journal_format.h"
#include "run_directories.h"
#include "writer_liveness.h"

namespace leaseguard::cli {
namespace {

struct TopProcess {
  pid_t pid = 0;
  std::map<int, uint64_t> live;      // device -> bytes
  std::optional<uint64_t> lost;      // what its last live check found lost; none: never checked
  std::vector<std::string> growing;  // its sites that grew across its checks, fastest first
};

struct TopLease {
  std::string id, name, ttl_left, stage;  // ttl_left "-": none
  std::vector<TopProcess> processes;
};

struct Snapshot {
  std::string source;  // where it came from, for the header line
  std::vector<TopLease> leases;
  std::string problem;  // why there is nothing to show
};

std::string human_ms(const std::string &ms) {
  if (ms == "-") return "-";
  const unsigned long long total = std::strtoull(ms.c_str(), nullptr, 10) / 1000;
  char text[32];
  if (total >= 3600) std::snprintf(text, sizeof text, "%lluh%02llum", total / 3600, total % 3600 / 60);
  else if (total >= 60) std::snprintf(text, sizeof text, "%llum%02llus", total / 60, total % 60);
  else std::snprintf(text, sizeof text, "%llus", total);
  return text;
}

// From the daemon; false if none answers.
bool from_daemon(const std::string &socket, Snapshot &snapshot, GrowingSites &growing) {
  std::string error, text;
  const int fd = authority::connect_to(socket, error);
  if (fd < 0) return false;
  authority::Request request;
  request.verb = authority::Verb::Snapshot;
  authority::Answer answer;
  const bool asked = authority::ask(fd, authority::format_request(request), text, 5000, error) &&
                     authority::parse_answer(text, answer, error) && answer.ok;
  close(fd);
  if (!asked) return false;
  snapshot.source = "the lease authority at " + socket;
  for (const auto &[key, value] : answer.fields) {
    char first[160] = {}, second[160] = {}, third[32] = {}, fourth[32] = {};
    int journal_at = 0;
    if (key == "checked" &&
        std::sscanf(value.c_str(), "%159s %159s %31s %31s %n", first, second, third, fourth, &journal_at) == 4 &&
        !snapshot.leases.empty() && snapshot.leases.back().id == first) {
      const pid_t pid = static_cast<pid_t>(std::strtol(second, nullptr, 10));
      for (TopProcess &process : snapshot.leases.back().processes) {
        if (process.pid != pid) continue;
        process.lost = std::strtoull(third, nullptr, 10);
        process.growing = growing.of(value.substr(static_cast<size_t>(journal_at)), std::strtoull(fourth, nullptr, 10));
      }
      continue;
    }
    if (std::sscanf(value.c_str(), "%159s %159s %31s %31s", first, second, third, fourth) != 4) continue;
    if (key == "lease") {
      snapshot.leases.push_back({first, second, third, fourth, {}});
    } else if (key == "process" && !snapshot.leases.empty() && snapshot.leases.back().id == first) {
      std::vector<TopProcess> &processes = snapshot.leases.back().processes;
      const pid_t pid = static_cast<pid_t>(std::strtol(second, nullptr, 10));
      if (processes.empty() || processes.back().pid != pid) processes.push_back({pid, {}, {}, {}});
      if (std::string(third) != "-") processes.back().live[std::atoi(third)] = std::strtoull(fourth, nullptr, 10);
    }
  }
  return true;
}

// Without a daemon: the running processes of the newest run under `out_dir`, from their journals.
void from_journals(const std::string &out_dir, Snapshot &snapshot,
                   std::map<std::string, std::unique_ptr<journal::LiveBytesReader>> &readers, GrowingSites &growing) {
  const std::optional<std::string> run = newest_run(out_dir);
  const std::string directory = run ? *run : out_dir;
  snapshot.source = "the journals in " + directory + " (no lease authority answers)";
  DIR *listing = opendir(directory.c_str());
  if (listing == nullptr) {
    snapshot.problem = "no lease authority answers, and there are no journals in " + directory;
    return;
  }
  TopLease everything{"-", "(no lease authority)", "-", "live", {}};
  while (const dirent *entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.size() < 9 || name.compare(name.size() - 8, 8, ".journal") != 0) continue;
    // RUN_ID.PID[.N].journal: the pid is the number after the run id.
    const std::string stem = name.substr(0, name.size() - 8);
    const size_t last_dot = stem.rfind('.');
    std::string pid_text = stem.substr(last_dot + 1);
    if (stem.find('.') != last_dot) {  // PID.N: the image number follows the pid
      const std::string before = stem.substr(0, last_dot);
      pid_text = before.substr(before.rfind('.') + 1);
    }
    const pid_t pid = static_cast<pid_t>(std::strtol(pid_text.c_str(), nullptr, 10));
    // Only a journal whose writer still runs (writer_liveness.h): a dead or reused pid reads as gone.
    if (pid <= 0 || !journal::writer_running(directory + "/" + name)) continue;
    std::unique_ptr<journal::LiveBytesReader> &reader = readers[directory + "/" + name];
    std::string error;
    if (!reader) {
      reader = std::make_unique<journal::LiveBytesReader>();
      if (!reader->open(directory + "/" + name, getuid(), error)) continue;
    }
    reader->update();
    if (reader->process_ended()) continue;
    everything.processes.push_back({pid, reader->live_bytes_per_device(), reader->lost_bytes_at_last_check(),
                                    growing.of(directory + "/" + name, reader->checks())});
  }
  closedir(listing);
  snapshot.leases.push_back(std::move(everything));
}

std::string render(const Snapshot &snapshot) {
  std::string out;
  size_t processes = 0;
  uint64_t total = 0;
  for (const TopLease &lease : snapshot.leases)
    for (const TopProcess &process : lease.processes) {
      ++processes;
      for (const auto &[device, bytes] : process.live) total += bytes;
    }
  char line[512];
  std::snprintf(line, sizeof line, "leaseguard top: %zu lease(s), %zu process(es), %s of device memory live\n",
                snapshot.leases.size(), processes, human_bytes(total).c_str());
  out += line;
  out += "from " + snapshot.source + "\n\n";
  if (!snapshot.problem.empty()) return out + snapshot.problem + "\n";
  std::snprintf(line, sizeof line, "%-6s %-24s %-9s %-8s %8s %6s %12s %12s\n", "ID", "LEASE", "TTL LEFT", "STAGE",
                "PID", "DEVICE", "LIVE", "LOST");
  out += line;
  for (const TopLease &lease : snapshot.leases) {
    bool first = true;
    // The lease's columns on its first row only.
    auto lease_columns = [&] {
      char columns[256];
      std::snprintf(columns, sizeof columns, "%-6s %-24.24s %-9s %-8s ", first ? lease.id.c_str() : "",
                    first ? lease.name.c_str() : "", first ? human_ms(lease.ttl_left).c_str() : "",
                    first ? lease.stage.c_str() : "");
      first = false;
      return std::string(columns);
    };
    // LOST: what the process's last live check found lost, on its first row ("-": none yet).
    auto process_columns = [](const TopProcess &process, bool first_row, const std::string &device,
                              const std::string &live) {
      const std::string lost = !first_row ? "" : process.lost ? human_bytes(*process.lost) : "-";
      char columns[160];
      std::snprintf(columns, sizeof columns, "%8d %6s %12s %12s\n", static_cast<int>(process.pid), device.c_str(),
                    live.c_str(), lost.c_str());
      return std::string(columns);
    };
    if (lease.processes.empty()) out += lease_columns() + "       -\n";
    for (const TopProcess &process : lease.processes) {
      if (process.live.empty()) out += lease_columns() + process_columns(process, true, "-", "0 B");
      bool first_row = true;
      for (const auto &[device, bytes] : process.live) {
        out += lease_columns() + process_columns(process, first_row, std::to_string(device), human_bytes(bytes));
        first_row = false;
      }
      // Under its rows: the sites that grew across its live checks.
      for (const std::string &site : process.growing) out += lease_columns() + "  growing: " + site + "\n";
    }
  }
  return out;
}

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

}  // namespace

int top_command(const TopOptions &options) {
  const std::string socket = authority::socket_path(options.socket);
  std::map<std::string, std::unique_ptr<journal::LiveBytesReader>> readers;
  GrowingSites growing;
  auto take = [&] {
    Snapshot snapshot;
    if (!from_daemon(socket, snapshot, growing)) from_journals(options.out_dir, snapshot, readers, growing);
    return snapshot;
  };
  if (options.once || !isatty(STDOUT_FILENO)) {
    std::fputs(render(take()).c_str(), stdout);
    return 0;
  }
  // A terminal: redrawn every second until q, ^C or SIGTERM. Its settings are given back.
  struct sigaction stop {};
  stop.sa_handler = on_stop;
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  termios saved{};
  const bool raw = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
  if (raw) {
    termios keys = saved;
    keys.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    tcsetattr(STDIN_FILENO, TCSANOW, &keys);
  }
  std::fputs("\x1b[?25l", stdout);  // no cursor while drawing
  std::fflush(stdout);
  while (!g_stop) {
    // One write a frame: a terminal (or a reader of its screen) never sees half of one, which
    // stdout's line buffering would show between the frame's last line and its footer.
    // A terminal gone is nothing to draw on: q, ^C or SIGTERM still end the loop.
    write_all(STDOUT_FILENO, "\x1b[H\x1b[2J" + render(take()) + "\n(q quits)");
    pollfd key{STDIN_FILENO, POLLIN, 0};
    if (poll(&key, raw ? 1 : 0, 1000) > 0) {
      char pressed = 0;
      if (read(STDIN_FILENO, &pressed, 1) == 1 && (pressed == 'q' || pressed == 'Q')) break;
    }
  }
  std::fputs("\x1b[?25h\n", stdout);
  if (raw) tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  return 0;
}

}  // namespace leaseguard::cli
