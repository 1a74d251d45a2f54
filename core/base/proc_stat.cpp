#include "proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leaseguard {

bool read_proc_stat(pid_t pid, ProcStat &stat) noexcept {
  char path[32];
  if (pid == 0) std::snprintf(path, sizeof path, "/proc/self/stat");
  else std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[1024];
  ssize_t got;
  do got = read(fd, buffer, sizeof buffer - 1);
  while (got < 0 && errno == EINTR);
  close(fd);
  if (got <= 0) return false;
  buffer[got] = '\0';
  // The command (field 2) is in parentheses and may hold spaces and parentheses itself:
  // fields are counted after its last ')'. Then " S ...": the state is field 3.
  const char *field = std::strrchr(buffer, ')');
  if (field == nullptr || field[1] != ' ' || field[2] == '\0') return false;
  stat.state = field[2];
  // Each step moves to the space before the next field: from field 3 to field 22.
  for (int index = 2; field != nullptr && index < 22; ++index) field = std::strchr(field + 1, ' ');
  if (field == nullptr) return false;
  char *end = nullptr;
  stat.start_time = std::strtoull(field + 1, &end, 10);
  return end != field + 1;
}

}  // namespace leaseguard
