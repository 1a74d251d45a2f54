// Opening leaseguard's files and directories safely (see files.h for the rules).
#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>

namespace leaseguard {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel allows in one lookup (ELOOP past it)

std::deque<std::string> components_of(const std::string &path) {
  std::deque<std::string> components;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const std::string part = path.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
    if (!part.empty() && part != ".") components.push_back(part);
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return components;
}

int open_root_or_working_directory(bool root) { return ::open(root ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC); }

// Walks `path` as files.h says, creating missing directories if `create`. Returns the last
// directory's descriptor, or -1 with `error` set.
int walk_directories(const std::string &path, bool create, std::string &error) {
  std::deque<std::string> pending = components_of(path);
  int current = open_root_or_working_directory(!path.empty() && path[0] == '/');
  std::string walked = !path.empty() && path[0] == '/' ? "" : ".";  // for messages only
  int links = 0;
  auto fail = [&](const std::string &message) {
    error = message;
    if (current >= 0) ::close(current);
    return -1;
  };
  if (current < 0) return fail("cannot use " + path + ": " + std::strerror(errno));
  while (!pending.empty()) {
    const std::string name = pending.front();
    pending.pop_front();
    const std::string here = walked + "/" + name;
    int next = openat(current, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      if (mkdirat(current, name.c_str(), pending.empty() ? 0700 : 0755) != 0 && errno != EEXIST)
        return fail("cannot create " + here + ": " + std::strerror(errno));
      next = openat(current, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0 && (errno == ENOTDIR || errno == ELOOP)) {
      struct stat link {};
      if (fstatat(current, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(link.st_mode))
        return fail(here + " is not a directory");
      if (link.st_uid != 0 && link.st_uid != geteuid()) {
        errno = 0;  // refused, not failed: the message says why
        return fail(here + " is a symbolic link owned by uid " + std::to_string(link.st_uid) +
                    "; refusing to follow it");
      }
      if (++links > kMaxLinks) return fail("cannot use " + path + ": " + std::strerror(ELOOP));
      char target[4096];
      const ssize_t length = readlinkat(current, name.c_str(), target, sizeof target - 1);
      if (length <= 0) return fail("cannot read the link " + here + ": " + std::strerror(errno));
      const std::string to(target, static_cast<size_t>(length));
      std::deque<std::string> parts = components_of(to);
      pending.insert(pending.begin(), parts.begin(), parts.end());
      if (to[0] == '/') {
        ::close(current);
        current = open_root_or_working_directory(true);
        walked = "";
        if (current < 0) return fail("cannot use /: " + std::string(std::strerror(errno)));
      }
      continue;
    }
    if (next < 0) return fail("cannot use " + here + ": " + std::strerror(errno));
    ::close(current);
    current = next;
    walked = here;
  }
  return current;
}

// Whoever else can write into the directory can plant files where leaseguard writes and
// reads (a FIFO that hangs it, a journal that lies), so it must be this user's and closed
// to others. A group-writable directory is accepted only for this user's own group (user
// private groups, with umask 002, make every directory so).
bool is_safe_to_write_into(int directory, const std::string &path, std::string &error) {
  struct stat status {};
  if (fstat(directory, &status) != 0 || !S_ISDIR(status.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  if (status.st_uid != geteuid()) {
    error = path + " is owned by uid " + std::to_string(status.st_uid) + ", not by this user (uid " +
            std::to_string(geteuid()) + "); refusing to write there";
    return false;
  }
  if ((status.st_mode & S_IWOTH) != 0 || ((status.st_mode & S_IWGRP) != 0 && status.st_gid != getegid())) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    error = path + " is writable by others (mode " + mode + "); refusing to write there (chmod go-w " + path + ")";
    return false;
  }
  return true;
}

}  // namespace

int open_output_directory(const std::string &path, std::string &error) {
  if (path.empty()) {
    error = "the output directory is empty";
    return -1;
  }
  const int directory = walk_directories(path, true, error);
  if (directory < 0) return -1;
  if (!is_safe_to_write_into(directory, path, error)) {
    ::close(directory);
    return -1;
  }
  return directory;
}

bool make_output_directory(const std::string &path, std::string &error) {
  const int directory = open_output_directory(path, error);
  if (directory < 0) return false;
  ::close(directory);
  return true;
}

int open_parent_directory(const std::string &path, std::string &name, std::string &error) {
  const size_t slash = path.find_last_of('/');
  name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    error = "cannot write " + path + ": not a file name";
    return -1;
  }
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  return walk_directories(parent, false, error);
}

int open_regular_file(const std::string &path, std::string &error, struct stat *status_out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    error = "cannot read " + path + ": not a regular file";
    ::close(fd);
    return -1;
  }
  // Reads of a regular file never block anyway; clear the flag so they are ordinary ones.
  // (F_SETFL sets only the flags it may change: of those, the open set O_NONBLOCK alone.)
  fcntl(fd, F_SETFL, 0);
  if (status_out != nullptr) *status_out = status;
  return fd;
}

bool read_regular_file(const std::string &path, std::string &text, std::string &error) {
  const int fd = open_regular_file(path, error);
  if (fd < 0) return false;
  text.clear();
  char buffer[64 << 10];
  while (true) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return true;
}

bool write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t written = ::write(fd, text.data() + done, text.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    done += static_cast<size_t>(written);
  }
  return true;
}

std::string absolute_path(const std::string &path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + (path.empty() || path == "." ? "" : "/" + path);
}

}  // namespace leaseguard
