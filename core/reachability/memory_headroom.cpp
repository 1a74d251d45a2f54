// The memory this process may still use, from /proc and its cgroups' files (memory_headroom.h).
#include "memory_headroom.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace leaseguard {
namespace {

// A limit this large is no limit: cgroup v1 writes 2^63 less a page for "unlimited".
constexpr uint64_t kUnlimitedAbove = uint64_t{1} << 62;

std::string read_text(const std::string &path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t got; (got = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(got));
  close(fd);
  return text;
}

bool parse_number(std::string_view text, uint64_t &value) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text == "max") {
    value = kNoMemoryLimit;
    return true;
  }
  if (text.empty() || text.size() > 20) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// The value after `key` and a space at the start of a line of `text` ("inactive_file 4096").
bool field(std::string_view text, std::string_view key, uint64_t &value) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        (line[key.size()] == ' ' || line[key.size()] == ':')) {
      line.remove_prefix(key.size() + 1);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      return parse_number(line.substr(0, line.find(' ')), value);
    }
    at = end + 1;
  }
  return false;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t end = text.find(separator, at);
    parts.push_back(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return parts;
    at = end + 1;
  }
}

// mountinfo writes a space in a path as \040.
std::string unescape(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '\\' && i + 3 < path.size()) {
      const std::string octal(path.substr(i + 1, 3));
      char *end = nullptr;
      const long code = std::strtol(octal.c_str(), &end, 8);
      if (end == octal.c_str() + 3) {
        out.push_back(static_cast<char>(code));
        i += 3;
        continue;
      }
    }
    out.push_back(path[i]);
  }
  return out;
}

struct Hierarchy {
  bool v2 = false;
  std::string mount_root;   // the cgroup mounted there ("/" unless a namespace mounted a part)
  std::string mount_point;  // where
};

std::vector<Hierarchy> memory_hierarchies(std::string_view mountinfo) {
  std::vector<Hierarchy> found;
  for (std::string_view line : split(mountinfo, '\n')) {
    const std::vector<std::string_view> fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const std::string_view type = dash[1], options = dash[3];
    const std::vector<std::string_view> option_list = split(options, ',');
    const bool v1_memory =
        type == "cgroup" && std::find(option_list.begin(), option_list.end(), "memory") != option_list.end();
    if (type != "cgroup2" && !v1_memory) continue;
    found.push_back(Hierarchy{type == "cgroup2", unescape(fields[3]), unescape(fields[4])});
  }
  return found;
}

// The process's cgroup in that hierarchy, from /proc/self/cgroup ("0::/path" for v2,
// "4:memory:/path" for v1); empty if it is in none.
std::string process_cgroup(std::string_view proc_cgroup, bool v2) {
  for (std::string_view line : split(proc_cgroup, '\n')) {
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::vector<std::string_view> list = split(controllers, ',');
    const bool match = v2 ? line.substr(0, first) == "0" && controllers.empty()
                          : std::find(list.begin(), list.end(), "memory") != list.end();
    if (match) return std::string(line.substr(second + 1));
  }
  return {};
}

// limit - (usage - inactive file cache) at one cgroup directory; kNoMemoryLimit without a limit.
uint64_t headroom_at(const std::string &directory, bool v2) {
  uint64_t limit = 0, usage = 0, inactive = 0;
  if (!parse_number(read_text(directory + (v2 ? "/memory.max" : "/memory.limit_in_bytes")), limit) ||
      limit >= kUnlimitedAbove)
    return kNoMemoryLimit;
  if (!parse_number(read_text(directory + (v2 ? "/memory.current" : "/memory.usage_in_bytes")), usage))
    return kNoMemoryLimit;
  const std::string stat = read_text(directory + "/memory.stat");
  if (!field(stat, v2 ? "inactive_file" : "total_inactive_file", inactive)) field(stat, "inactive_file", inactive);
  const uint64_t working = usage - std::min(usage, inactive);
  return limit > working ? limit - working : 0;
}

uint64_t cgroup_headroom(const std::string &root, const Hierarchy &hierarchy, const std::string &path) {
  std::string relative = path;
  if (hierarchy.mount_root != "/") {
    if (relative.compare(0, hierarchy.mount_root.size(), hierarchy.mount_root) != 0) return kNoMemoryLimit;
    relative.erase(0, hierarchy.mount_root.size());
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  uint64_t least = kNoMemoryLimit;
  // From the process's own cgroup up to the mounted one: a parent's limit binds its children.
  for (;;) {
    least = std::min(least, headroom_at(root + hierarchy.mount_point + relative, hierarchy.v2));
    if (relative.empty()) return least;
    relative.erase(relative.rfind('/'));
  }
}

}  // namespace

uint64_t memory_headroom(const std::string &root) noexcept {
  try {
    uint64_t least = kNoMemoryLimit;
    uint64_t available_kib = 0;
    if (field(read_text(root + "/proc/meminfo"), "MemAvailable", available_kib))
      least = std::min(least, available_kib * 1024);
    const std::string cgroups = read_text(root + "/proc/self/cgroup");
    for (const Hierarchy &hierarchy : memory_hierarchies(read_text(root + "/proc/self/mountinfo"))) {
      const std::string path = process_cgroup(cgroups, hierarchy.v2);
      if (!path.empty()) least = std::min(least, cgroup_headroom(root, hierarchy, path));
    }
    return least;
  } catch (...) {
    return 0;  // no memory even to read the limits with: none to spare either
  }
}

}  // namespace leaseguard
