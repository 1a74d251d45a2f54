// Implementation of the runs' own directories under --out.
#include "run_directories.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace leaseguard::cli {
namespace {

constexpr char kRunPrefix[] = "run-";
constexpr char kLatest[] = "latest";

// "run-YYYYMMDD-HHMMSS.mmm-PID": the shape start_run_directory gives, and nothing else.
bool is_run_name(const std::string &name) {
  const size_t prefix = sizeof kRunPrefix - 1;
  if (name.compare(0, prefix, kRunPrefix) != 0 || name.size() < prefix + 21) return false;
  const std::string rest = name.substr(prefix);
  for (size_t i = 0; i < 19; ++i) {
    const char c = rest[i];
    const bool separator = i == 8 || i == 15;
    if (separator ? c != (i == 8 ? '-' : '.') : (c < '0' || c > '9')) return false;
  }
  if (rest[19] != '-') return false;
  return rest.find_first_not_of("0123456789", 20) == std::string::npos && rest.size() > 20;
}

std::string run_name_now() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char name[64];
  std::snprintf(name, sizeof name, "%s%04d%02d%02d-%02d%02d%02d.%03ld-%d", kRunPrefix, utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, now.tv_nsec / 1000000,
                static_cast<int>(getpid()));
  return name;
}

// Replaces `latest` with a link to `name`, through a temporary link renamed over it, so a
// reader sees the old run or the new one, never no link.
bool point_latest_at(const std::string &out_dir, const std::string &name, std::string &error) {
  const std::string temporary = out_dir + "/." + kLatest + "." + std::to_string(getpid());
  unlink(temporary.c_str());
  if (symlink(name.c_str(), temporary.c_str()) != 0 ||
      rename(temporary.c_str(), (out_dir + "/" + kLatest).c_str()) != 0) {
    error = "cannot point " + out_dir + "/" + kLatest + " at " + name + ": " + std::strerror(errno);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> start_run_directory(const std::string &out_dir, std::string &error) {
  const std::string name = run_name_now();
  const std::string path = out_dir + "/" + name;
  if (mkdir(path.c_str(), 0700) != 0) {
    error = "cannot make " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  // A shared lock on the run's directory for as long as `run` lives (never closed; not
  // inherited by the command): another run's --keep passes over a run still going.
  const int held = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (held >= 0) flock(held, LOCK_SH);
  if (!point_latest_at(out_dir, name, error)) return std::nullopt;
  return path;
}

std::vector<std::string> run_directory_names(const std::string &out_dir) {
  std::vector<std::string> names;
  DIR *directory = opendir(out_dir.c_str());
  if (directory == nullptr) return names;
  while (const dirent *entry = readdir(directory)) {
    const std::string name = entry->d_name;
    struct stat status;
    // A run is a real directory of this shape: never followed through a link.
    if (is_run_name(name) && fstatat(dirfd(directory), name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(status.st_mode))
      names.push_back(name);
  }
  closedir(directory);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> newest_run(const std::string &directory) {
  const std::vector<std::string> runs = run_directory_names(directory);
  if (runs.empty()) return std::nullopt;
  // `latest` is read, never followed: only a name among the runs counts.
  char target[256];
  const ssize_t length = readlink((directory + "/" + kLatest).c_str(), target, sizeof target - 1);
  if (length > 0) {
    const std::string name(target, static_cast<size_t>(length));
    if (std::find(runs.begin(), runs.end(), name) != runs.end()) return directory + "/" + name;
  }
  return directory + "/" + runs.back();
}

bool prune_runs(const std::string &out_dir, size_t keep, std::string &error) {
  std::vector<std::string> runs = run_directory_names(out_dir);
  if (runs.size() <= keep) return true;
  runs.resize(runs.size() - keep);  // the oldest
  for (const std::string &name : runs) {
    const std::string path = out_dir + "/" + name;
    const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    // A run still going (its `run` holds the directory's lock: start_run_directory) is left.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      continue;
    }
    DIR *directory = fdopendir(fd);
    if (directory == nullptr) {
      close(fd);
      continue;
    }
    while (const dirent *entry = readdir(directory)) {
      const std::string file = entry->d_name;
      auto ends_with = [&](const std::string &suffix) {
        return file.size() > suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      const bool ours = ends_with(".journal") || ends_with(".control") || ends_with(".exits") || file == kRunReportName;
      if (ours) unlinkat(dirfd(directory), file.c_str(), 0);
    }
    closedir(directory);
    if (rmdir(path.c_str()) != 0 && errno != ENOTEMPTY) {
      error = "cannot remove the old run " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace leaseguard::cli
