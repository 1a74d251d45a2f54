// A path as another process names it, as the daemon can open it (see mount_paths.h).
#include "mount_paths.h"

#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace leaseguard::authority {
namespace {

struct Mount {
  std::string device;  // major:minor
  std::string root;    // the directory of the file system the mount shows
  std::string point;   // where it is mounted, in the reading process's view
};

bool octal(char c) { return c >= '0' && c <= '7'; }

// mountinfo escapes a space, tab, newline and backslash as \ooo.
std::string unescaped(const std::string &field) {
  std::string text;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && octal(field[i + 1]) && octal(field[i + 2]) && octal(field[i + 3])) {
      text += static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0'));
      i += 3;
    } else {
      text += field[i];
    }
  }
  return text;
}

std::vector<Mount> mounts_of(const std::string &mountinfo) {
  std::vector<Mount> mounts;
  std::ifstream file(mountinfo);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    if (fields >> id >> parent >> device >> root >> point)
      mounts.push_back(Mount{device, unescaped(root), unescaped(point)});
  }
  return mounts;
}

// The part of `path` below `directory`, "" for the directory itself; nothing where `path` is
// not in it (whole components: /a/bc is not in /a/b).
std::optional<std::string> below(const std::string &path, const std::string &directory) {
  if (directory == "/") return path == "/" ? std::string() : path;
  if (path.compare(0, directory.size(), directory) != 0) return std::nullopt;
  if (path.size() == directory.size()) return std::string();
  if (path[directory.size()] != '/') return std::nullopt;
  return path.substr(directory.size());
}

std::string joined(const std::string &directory, const std::string &rest) {
  if (rest.empty()) return directory;
  return directory == "/" ? rest : directory + rest;
}

bool same_mounts(pid_t pid) {
  struct stat theirs {
  }, ours{};
  return stat(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), &theirs) == 0 &&
         stat("/proc/self/ns/mnt", &ours) == 0 && theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev;
}

}  // namespace

std::string path_in_own_mounts(pid_t pid, const std::string &path) {
  if (path.empty() || path[0] != '/' || same_mounts(pid)) return path;
  // The mount that holds the path in the process's view: the last listed of those whose
  // point is the path's longest (a later mount over the same point hides the earlier).
  const std::vector<Mount> theirs = mounts_of("/proc/" + std::to_string(pid) + "/mountinfo");
  const Mount *holder = nullptr;
  std::string rest;
  for (const Mount &mount : theirs) {
    const std::optional<std::string> part = below(path, mount.point);
    if (part && (holder == nullptr || mount.point.size() >= holder->point.size())) {
      holder = &mount;
      rest = *part;
    }
  }
  if (holder == nullptr) return path;
  const std::string in_file_system = joined(holder->root, rest);
  // The same file system in ours, by the mount that shows the most of it around the path.
  const Mount *ours = nullptr;
  std::string translated;
  for (const Mount &mount : mounts_of("/proc/self/mountinfo")) {
    if (mount.device != holder->device) continue;
    const std::optional<std::string> part = below(in_file_system, mount.root);
    if (part && (ours == nullptr || mount.root.size() > ours->root.size())) {
      ours = &mount;
      translated = joined(mount.point, *part);
    }
  }
  return ours != nullptr ? translated : path;
}

}  // namespace leaseguard::authority
