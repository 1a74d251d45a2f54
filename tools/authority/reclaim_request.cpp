#include "reclaim_request.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "authority_protocol.h"

namespace leaseguard::authority {

bool ask_to_reclaim(const std::string &control_path, uid_t owner, uint32_t request, std::string &error) {
  const int fd = open(control_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = "cannot open the control page " + control_path + ": " + std::strerror(errno);
    return false;
  }
  bool asked = false;
  struct stat status {};
  ControlPage page{};
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_uid != owner ||
      status.st_size != static_cast<off_t>(kControlPageBytes)) {
    error = control_path + " is not a control page of the lease's owner";
  } else if (pread(fd, &page, sizeof page, 0) != static_cast<ssize_t>(sizeof page) ||
             std::memcmp(page.magic, kControlMagic, sizeof page.magic) != 0 || page.version < kControlFirstVersion ||
             page.version > kControlVersion) {
    error = control_path + " is not a control page of this version";
  } else if (pwrite(fd, &request, sizeof request, kControlRequestOffset) != static_cast<ssize_t>(sizeof request)) {
    error = "cannot write to the control page " + control_path + ": " + std::strerror(errno);
  } else {
    // The futex is named by the file's page, so the wake needs a mapping of it; it is never
    // touched from here. A file truncated meanwhile makes the wake fail (EFAULT), not fault.
    void *map = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      error = "cannot map the control page " + control_path + ": " + std::strerror(errno);
    } else {
      auto *word = reinterpret_cast<uint32_t *>(static_cast<char *>(map) + kControlRequestOffset);
      asked = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0) >= 0;
      if (!asked) error = "cannot wake the process of " + control_path + ": " + std::strerror(errno);
      munmap(map, kControlPageBytes);
    }
  }
  close(fd);
  return asked;
}

}  // namespace leaseguard::authority
