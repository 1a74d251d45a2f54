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
  // A shared lock: readers asking at once never take each other for a writer.
  bool running = false;
  if (flock(fd, LOCK_SH | LOCK_NB) != 0) running = errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock, if it was taken
  return running;
}

}  // namespace leaseguard::journal
