// Output files replaced whole (see output_file.h).
#include "output_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "files.h"

namespace leaseguard::report {
namespace {

std::string random_suffix() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, GRND_NONBLOCK) != sizeof bits)
    bits = static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&bits));
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
  return text;
}

}  // namespace

OutputFile::OutputFile(const std::string &path) : path_(path) {
  std::string why;
  directory_ = open_parent_directory(path, name_, why);
  if (directory_ < 0) {
    error_ = errno != 0 ? "cannot write " + path + ": " + std::strerror(errno) : "cannot write " + path + ": " + why;
    return;
  }
  struct stat existing {};
  if (fstatat(directory_, name_.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(existing.st_mode)) {
    if (!S_ISCHR(existing.st_mode)) {
      error_ = "cannot write " + path + ": " +
               (S_ISLNK(existing.st_mode) ? "a symbolic link; refusing to write through it" : "not a regular file");
      return;
    }
    // A device (/dev/null, /dev/full): written as it is.
    fd_ = openat(directory_, name_.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) fail(errno);
    return;
  }
  // A file with no name until it is whole (O_TMPFILE): if leaseguard is killed while writing,
  // nothing is left behind. Where the file system has none, a temporary name.
  fd_ = openat(directory_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  unnamed_ = fd_ >= 0;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temporary_ = "." + name_ + "." + random_suffix() + ".tmp";
    fd_ = openat(directory_, temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    fail(errno);
    temporary_.clear();
  }
}

// Gives the unnamed file a temporary name beside its place, to be renamed over it: linkat of
// /proc/self/fd/N needs no privilege (AT_EMPTY_PATH would).
bool OutputFile::name_unnamed_file() {
  const std::string link = "/proc/self/fd/" + std::to_string(fd_);
  for (int attempt = 0; attempt < 16; ++attempt) {
    temporary_ = "." + name_ + "." + random_suffix() + ".tmp";
    if (linkat(AT_FDCWD, link.c_str(), directory_, temporary_.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
    // No /proc: root may name it by its descriptor.
    if (errno == ENOENT && linkat(fd_, "", directory_, temporary_.c_str(), AT_EMPTY_PATH) == 0) return true;
    if (errno != EEXIST) break;
  }
  fail(errno);
  temporary_.clear();
  return false;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::write(std::string_view text) {
  size_t written = 0;
  while (fd_ >= 0 && written < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail(n == 0 ? EIO : errno);
      discard();
      return;
    }
    written += static_cast<size_t>(n);
  }
}

bool OutputFile::close(std::string &error) {
  if (unnamed_ && fd_ >= 0 && error_.empty()) name_unnamed_file();
  if (fd_ >= 0 && ::close(fd_) != 0) fail(errno);
  fd_ = -1;
  if (error_.empty() && !temporary_.empty() && renameat(directory_, temporary_.c_str(), directory_, name_.c_str()) != 0)
    fail(errno);
  if (error_.empty()) temporary_.clear();  // in place: nothing to remove
  discard();
  if (error_.empty()) return true;
  error = error_;
  return false;
}

void OutputFile::fail(int error_number) {
  if (error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(error_number);
}

void OutputFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty() && directory_ >= 0) unlinkat(directory_, temporary_.c_str(), 0);
  temporary_.clear();
  if (directory_ >= 0) ::close(directory_);
  directory_ = -1;
}

}  // namespace leaseguard::report
