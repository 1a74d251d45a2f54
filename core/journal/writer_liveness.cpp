// Whether a journal's writer is still running (see writer_liveness.h).
#include "writer_liveness.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace leaseguard::journal {

void hold_writer_lock(int fd) noexcept {
  if (fd >= 0) (void)flock(fd, LOCK_EX | LOCK_NB);
}

bool writer_running(const std::string &path) noexcept {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  const bool running = writer_running_on(fd);
  ::close(fd);  // drops the shared lock, if it was taken
  return running;
}

bool writer_running_on(int fd) noexcept {
  // A shared lock: readers asking at once never take each other for a writer. It stays
  // until the caller closes the descriptor, which lets it go.
  return flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

}  // namespace leaseguard::journal
