// Which PID namespace a process is in (see pid_namespace.h).
#include "pid_namespace.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace leaseguard {

uint64_t pid_namespace_of(pid_t pid) noexcept {
  char path[48];
  if (pid == 0) std::snprintf(path, sizeof path, "/proc/self/ns/pid");
  else std::snprintf(path, sizeof path, "/proc/%d/ns/pid", static_cast<int>(pid));
  struct stat status {};
  return stat(path, &status) == 0 ? static_cast<uint64_t>(status.st_ino) : 0;
}

pid_t innermost_pid(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    pid_t last = pid;
    for (pid_t value; fields >> value;) last = value;
    return last;
  }
  return pid;
}

std::string journal_process_name(pid_t pid, uint64_t namespace_id, uint64_t run_namespace_id) {
  std::string name = std::to_string(pid);
  if (namespace_id != 0 && run_namespace_id != 0 && namespace_id != run_namespace_id)
    name += "-ns" + std::to_string(namespace_id);
  return name;
}

bool parse_journal_process_name(std::string_view name, uint64_t &namespace_id) noexcept {
  namespace_id = 0;
  const size_t mark = name.find("-ns");
  const std::string_view pid = name.substr(0, mark);
  auto all_digits = [](std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!all_digits(pid)) return false;
  if (mark == std::string_view::npos) return true;
  const std::string_view rest = name.substr(mark + 3);
  if (!all_digits(rest)) return false;
  return std::from_chars(rest.data(), rest.data() + rest.size(), namespace_id).ec == std::errc{} && namespace_id != 0;
}

}  // namespace leaseguard
