#include "process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include "proc_stat.h"

namespace leaseguard::authority {
namespace {

bool read_small_file(const std::string &path, std::string &contents) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  contents.clear();
  char buffer[4096];
  while (true) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    contents.append(buffer, static_cast<size_t>(got));
    if (contents.size() > (1u << 20)) break;
  }
  close(fd);
  return true;
}

template <typename Number>
bool parse_number(std::string_view text, Number &value) {
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value);
  return problem == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::optional<ProcessName> live_process(pid_t pid) {
  ProcStat stat;
  if (pid <= 0 || !read_proc_stat(pid, stat) || stat.state == 'Z' || stat.state == 'X') return std::nullopt;
  return ProcessName{pid, stat.start_time};
}

bool still_runs(const ProcessName &process) {
  const std::optional<ProcessName> now = live_process(process.pid);
  return now && *now == process;
}

std::vector<ProcessName> children_of(const ProcessName &process) {
  std::vector<ProcessName> children;
  if (!still_runs(process)) return children;
  const std::string tasks = "/proc/" + std::to_string(process.pid) + "/task";
  DIR *listing = opendir(tasks.c_str());
  if (listing == nullptr) return children;
  while (const dirent *task = readdir(listing)) {
    if (task->d_name[0] == '.') continue;
    std::string list;
    if (!read_small_file(tasks + "/" + task->d_name + "/children", list)) continue;
    std::string_view rest = list;
    while (!rest.empty()) {
      const size_t space = rest.find(' ');
      pid_t child = 0;
      if (parse_number(rest.substr(0, space), child))
        if (std::optional<ProcessName> found = live_process(child)) children.push_back(*found);
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
  }
  closedir(listing);
  return children;
}

std::vector<ProcessName> process_tree(const ProcessName &process) {
  std::vector<ProcessName> tree;
  if (!still_runs(process)) return tree;
  tree.push_back(process);
  for (size_t next = 0; next < tree.size() && tree.size() < 100'000; ++next)
    for (const ProcessName &child : children_of(tree[next])) tree.push_back(child);
  return tree;
}

bool signal_process(const ProcessName &process, int signal) {
#ifdef SYS_pidfd_open
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, process.pid, 0));
  if (pidfd >= 0) {
    // The pidfd names the process that had the pid when it was opened; checking the start
    // time after opening it makes sure that is ours, and the signal cannot reach another.
    const bool ours = still_runs(process);
    const bool sent = ours && syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0) == 0;
    close(pidfd);
    return sent;
  }
  if (errno == ESRCH) return false;
#endif
  return still_runs(process) && kill(process.pid, signal) == 0;
}

std::optional<uid_t> process_owner(pid_t pid) {
  std::string status;
  if (!read_small_file("/proc/" + std::to_string(pid) + "/status", status)) return std::nullopt;
  const size_t line = status.find("\nUid:\t");
  if (line == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(status).substr(line + 6);
  uid_t uid = 0;
  if (!parse_number(rest.substr(0, rest.find('\t')), uid)) return std::nullopt;
  return uid;
}

namespace {

// Each process of `owner`'s whose environment (NUL-separated entries, as /proc/PID/environ
// has them) `matches` says so.
template <typename Matches>
std::vector<ProcessName> processes_whose_environment(uid_t owner, Matches matches) {
  std::vector<ProcessName> found;
  DIR *proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent *item = readdir(proc)) {
    pid_t pid = 0;
    if (!parse_number(item->d_name, pid) || pid <= 0) continue;
    if (process_owner(pid) != owner) continue;
    std::string environment;
    if (!read_small_file("/proc/" + std::to_string(pid) + "/environ", environment)) continue;
    // Entries are NUL-separated: each whole, at the start or after a NUL.
    environment.insert(environment.begin(), '\0');
    if (environment.back() != '\0') environment += '\0';
    if (!matches(pid, environment)) continue;
    if (const std::optional<ProcessName> process = live_process(pid)) found.push_back(*process);
  }
  closedir(proc);
  return found;
}

// The value of `name` in `environment` (as above), if it has one.
std::optional<std::string_view> value_in(std::string_view environment, std::string_view name) {
  const std::string key = '\0' + std::string(name) + '=';
  const size_t at = environment.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t begin = at + key.size();
  return environment.substr(begin, environment.find('\0', begin) - begin);
}

}  // namespace

std::vector<ProcessName> processes_with_lease_mark(uint64_t lease_id, const std::string &socket_path, uid_t owner) {
  struct stat daemons {};
  const bool known = stat(socket_path.c_str(), &daemons) == 0;
  const std::string id = std::to_string(lease_id);
  return processes_whose_environment(owner, [&](pid_t pid, const std::string &environment) {
    if (value_in(environment, "LEASEGUARD_AUTHORITY_LEASE") != std::string_view(id)) return false;
    const std::optional<std::string_view> socket = value_in(environment, "LEASEGUARD_SOCKET");
    if (!socket || socket->empty() || socket->front() != '/') return false;
    if (*socket == socket_path) return true;
    // Another path: the same socket only if it is where the process sees it.
    struct stat its {};
    return known && stat(("/proc/" + std::to_string(pid) + "/root" + std::string(*socket)).c_str(), &its) == 0 &&
           its.st_dev == daemons.st_dev && its.st_ino == daemons.st_ino;
  });
}

}  // namespace leaseguard::authority
