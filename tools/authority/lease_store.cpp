#include "lease_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "files.h"

namespace leaseguard::authority {
namespace {

constexpr const char *kBootIdFile = "boot_id";
// The newest id granted: ids are never given twice, also after every lease was forgotten and
// the daemon restarted (a script may still hold an old one for `lease end`).
constexpr const char *kLastIdFile = "last_id";
constexpr std::string_view kLeasePrefix = "lease-";
// A lease file holds a grant, a few stage lines and one line per process: 10,000 processes of
// 4 KiB paths fit. Larger is not one of ours.
constexpr off_t kMaxLeaseFileBytes = 64 << 20;

std::string system_error(const std::string &what) { return what + ": " + std::strerror(errno); }

std::string lease_file(uint64_t id) { return std::string(kLeasePrefix) + std::to_string(id); }

// The whole of a regular file in the directory, not following a symlink; false if it is
// not one or is too large.
bool read_file_at(int directory_fd, const char *name, std::string &contents) {
  const int fd = openat(directory_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat status {};
  bool ok = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_size <= kMaxLeaseFileBytes;
  contents.clear();
  char buffer[1 << 16];
  while (ok) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) ok = false;
    if (got <= 0) break;
    contents.append(buffer, static_cast<size_t>(got));
    ok = contents.size() <= static_cast<size_t>(kMaxLeaseFileBytes);
  }
  close(fd);
  return ok;
}

// Writes `text` to `name` in the directory through a temporary file and a rename, durably.
bool replace_file_at(int directory_fd, const std::string &name, const std::string &text, std::string &error) {
  const std::string temporary = "." + name + ".new";
  unlinkat(directory_fd, temporary.c_str(), 0);
  const int fd = openat(directory_fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = system_error("cannot write " + temporary + " in the state directory");
    return false;
  }
  const bool written = write_all(fd, text) && fsync(fd) == 0;
  close(fd);
  if (!written || renameat(directory_fd, temporary.c_str(), directory_fd, name.c_str()) != 0) {
    error = system_error("cannot write " + name + " in the state directory");
    unlinkat(directory_fd, temporary.c_str(), 0);
    return false;
  }
  fsync(directory_fd);
  return true;
}

}  // namespace

LeaseStore::~LeaseStore() {
  if (directory_fd_ >= 0) close(directory_fd_);
}

bool LeaseStore::open(const std::string &directory, std::string &error) {
  // The directory's own path follows the rules for leaseguard's output (files.h): a link on
  // the way only if this user or root owns it, the directory this user's, writable by no one
  // else. Inside it nothing is followed.
  const int path_fd = open_output_directory(directory, error);
  if (path_fd < 0) {
    error = "state directory: " + error;
    return false;
  }
  const int fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(path_fd);
  if (fd < 0) {
    error = system_error("cannot open the state directory " + directory);
    return false;
  }
  if (directory_fd_ >= 0) close(directory_fd_);
  directory_fd_ = fd;
  return true;
}

bool LeaseStore::load(std::vector<LeaseState> &leases, uint64_t &next_id, std::vector<std::string> &warnings,
                      std::string &error) {
  leases.clear();
  next_id = 1;
  const int listing_fd = openat(directory_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *listing = listing_fd >= 0 ? fdopendir(listing_fd) : nullptr;
  if (listing == nullptr) {
    if (listing_fd >= 0) close(listing_fd);
    error = system_error("cannot list the state directory");
    return false;
  }
  while (const dirent *entry = readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == ".." || name == kBootIdFile || name == kLastIdFile || name[0] == '.') continue;
    uint64_t id = 0;
    const std::string_view digits = name.substr(std::min(name.size(), kLeasePrefix.size()));
    auto [end, problem] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (name.substr(0, kLeasePrefix.size()) != kLeasePrefix || problem != std::errc() ||
        end != digits.data() + digits.size() || id == 0) {
      warnings.push_back("the state directory holds '" + std::string(name) + "', not a lease file: left alone");
      continue;
    }
    std::string contents;
    if (!read_file_at(directory_fd_, entry->d_name, contents)) {
      warnings.push_back("cannot read " + std::string(name) + " in the state directory (not a regular file?): skipped");
      continue;
    }
    LeaseState lease;
    size_t start = 0, bad_lines = 0;
    // A last line without its newline was being appended when the daemon stopped: it was not
    // acted on, so it is not applied.
    while (true) {
      const size_t newline = contents.find('\n', start);
      if (newline == std::string::npos) break;
      if (!lease.apply(std::string_view(contents).substr(start, newline - start))) ++bad_lines;
      start = newline + 1;
    }
    if (lease.id != id) {
      warnings.push_back(std::string(name) + " in the state directory does not begin with its lease's grant: skipped");
      continue;
    }
    if (bad_lines > 0)
      warnings.push_back(std::string(name) + ": " + std::to_string(bad_lines) + " line(s) not understood, skipped");
    next_id = std::max(next_id, id + 1);
    leases.push_back(std::move(lease));
  }
  closedir(listing);
  std::string last_id;
  uint64_t last = 0;
  if (read_file_at(directory_fd_, kLastIdFile, last_id)) {
    auto [end, problem] = std::from_chars(last_id.data(), last_id.data() + last_id.size(), last);
    if (problem == std::errc() && (end == last_id.data() + last_id.size() || *end == '\n'))
      next_id = std::max(next_id, last + 1);
    else warnings.push_back("the state directory's last_id is not a number: ids are counted from the leases kept");
  }
  return true;
}

std::string LeaseStore::stored_boot_id() const {
  std::string contents;
  if (!read_file_at(directory_fd_, kBootIdFile, contents)) return "";
  while (!contents.empty() && contents.back() == '\n') contents.pop_back();
  return contents;
}

bool LeaseStore::record_boot_id(const std::string &boot_id, std::string &error) {
  return replace_file_at(directory_fd_, kBootIdFile, boot_id + "\n", error);
}

bool LeaseStore::create(uint64_t id, const std::vector<std::string> &lines, std::string &error) {
  std::string text;
  for (const std::string &line : lines) text += line + "\n";
  // The id first: a crash between the two loses an id, never gives one twice.
  return replace_file_at(directory_fd_, kLastIdFile, std::to_string(id) + "\n", error) &&
         replace_file_at(directory_fd_, lease_file(id), text, error);
}

bool LeaseStore::append(uint64_t id, const std::string &line, std::string &error) {
  const std::string name = lease_file(id);
  const int fd = openat(directory_fd_, name.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error = system_error("cannot append to " + name + " in the state directory");
    return false;
  }
  const bool written = write_all(fd, line + "\n") && fdatasync(fd) == 0;
  if (!written) error = system_error("cannot append to " + name + " in the state directory");
  close(fd);
  return written;
}

bool LeaseStore::remove(uint64_t id, std::string &error) {
  const std::string name = lease_file(id);
  if (unlinkat(directory_fd_, name.c_str(), 0) != 0 && errno != ENOENT) {
    error = system_error("cannot remove " + name + " from the state directory");
    return false;
  }
  return true;
}

std::string current_boot_id() {
  std::string contents;
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buffer[64];
  const ssize_t got = ::read(fd, buffer, sizeof buffer);
  close(fd);
  if (got > 0) contents.assign(buffer, static_cast<size_t>(got));
  while (!contents.empty() && contents.back() == '\n') contents.pop_back();
  return contents;
}

}  // namespace leaseguard::authority
