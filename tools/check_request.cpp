#include "check_request.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "control_page.h"
#include "pid_namespace.h"

namespace leaseguard::cli {
namespace {

using authority::ControlPage;

uint64_t now_ms() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1'000'000;
}

// The mapped file's path in a line of /proc/PID/maps (its sixth field to the end), if any.
std::string mapped_path(const std::string &line) {
  std::istringstream fields(line);
  std::string skipped;
  for (int i = 0; i < 5; ++i) fields >> skipped;
  std::string path;
  std::getline(fields >> std::ws, path);
  return path;
}

bool ends_with(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The shorter path to the same file, where the asker sees it at the same place.
std::string as_seen_here(const std::string &inside, const std::string &through_root) {
  struct stat here {
  }, there{};
  if (stat(inside.c_str(), &here) == 0 && stat(through_root.c_str(), &there) == 0 && here.st_dev == there.st_dev &&
      here.st_ino == there.st_ino)
    return inside;
  return through_root;
}

// Opens `path` if it is a control page that process `pid` (`own_pid` in its namespace) made.
int open_page_of(const std::string &path, pid_t own_pid) {
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat status {};
  ControlPage page{};
  const bool page_of_pid = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
                           (status.st_uid == geteuid() || geteuid() == 0) &&
                           status.st_size == static_cast<off_t>(authority::kControlPageBytes) &&
                           pread(fd, &page, sizeof page, 0) == static_cast<ssize_t>(sizeof page) &&
                           std::memcmp(page.magic, authority::kControlMagic, sizeof page.magic) == 0 &&
                           page.version >= authority::kControlVersion && page.pid == own_pid;
  if (page_of_pid) return fd;
  close(fd);
  return -1;
}

uint32_t checks_done(int fd) {
  uint32_t done = 0;
  if (pread(fd, &done, sizeof done, authority::kControlChecksDoneOffset) != static_cast<ssize_t>(sizeof done)) return 0;
  return done;
}

// Waits up to `ms` for the word at `word` to differ from `seen` (a wake from the process).
// A file truncated under the mapping makes the wait fail (EFAULT), never fault: then a pause.
void wait_for_change(const uint32_t *word, uint32_t seen, uint64_t ms) {
  timespec timeout{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000};
  if (syscall(SYS_futex, word, FUTEX_WAIT, seen, &timeout, nullptr, 0) != 0 && errno == EFAULT)
    nanosleep(&timeout, nullptr);
}

}  // namespace

ControlPageOfProcess::~ControlPageOfProcess() {
  if (fd >= 0) close(fd);
}

bool find_control_page(pid_t pid, ControlPageOfProcess &page, std::string &error) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream maps(proc + "/maps");
  if (!maps) {
    error = access(proc.c_str(), F_OK) != 0 ? "no process " + std::to_string(pid)
                                            : "cannot read " + proc + "/maps: another user's process?";
    return false;
  }
  std::set<std::string> pages;
  bool under_leaseguard = false;
  for (std::string line; std::getline(maps, line);) {
    const std::string path = mapped_path(line);
    if (ends_with(path, ".control")) pages.insert(path);
    if (path.find("libleaseguard") != std::string::npos) under_leaseguard = true;
  }
  const pid_t own_pid = innermost_pid(pid);
  for (const std::string &inside : pages) {
    const std::string through_root = proc + "/root" + inside;
    const int fd = open_page_of(through_root, own_pid);
    if (fd < 0) continue;
    page.fd = fd;
    page.control_path = as_seen_here(inside, through_root);
    page.journal_path =
        as_seen_here(authority::journal_path_of_control(inside), authority::journal_path_of_control(through_root));
    return true;
  }
  if (!pages.empty() || under_leaseguard)
    error = "process " + std::to_string(pid) +
            " runs under leaseguard but has no control page of its own: it has recorded no device allocation yet "
            "(nothing to check), or it cannot make one (its warning says why)";
  else error = "process " + std::to_string(pid) + " is not running under leaseguard";
  return false;
}

bool ask_for_check(pid_t pid, const ControlPageOfProcess &page, uint64_t timeout_ms, int32_t &status,
                   std::string &error) {
  const uint64_t deadline = now_ms() + timeout_ms;
  // One asker at a time: a request written while another waits would be answered by its check.
  while (flock(page.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || now_ms() >= deadline) {
      error = "another `leaseguard check " + std::to_string(pid) + "` kept the process busy past the timeout";
      return false;
    }
    timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
  void *map = mmap(nullptr, authority::kControlPageBytes, PROT_READ, MAP_SHARED, page.fd, 0);
  if (map == MAP_FAILED) {
    error = "cannot map the control page " + page.control_path + ": " + std::strerror(errno);
    return false;
  }
  // The futexes are named by the file's page, so waking and waiting need a mapping of it; it
  // is never read from here (pread only): the file is the process's.
  const auto *base = static_cast<const char *>(map);
  const auto *request_word = reinterpret_cast<const uint32_t *>(base + authority::kControlRequestOffset);
  const auto *done_word = reinterpret_cast<const uint32_t *>(base + authority::kControlChecksDoneOffset);
  const uint32_t before = checks_done(page.fd);
  const uint32_t request = authority::kControlCheck;
  bool answered = false;
  if (pwrite(page.fd, &request, sizeof request, authority::kControlRequestOffset) !=
      static_cast<ssize_t>(sizeof request)) {
    error = "cannot write to the control page " + page.control_path + ": " + std::strerror(errno);
  } else {
    syscall(SYS_futex, request_word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    for (;;) {
      if (checks_done(page.fd) != before) {
        answered = true;
        break;
      }
      struct stat file {};
      if ((kill(pid, 0) != 0 && errno == ESRCH) || (fstat(page.fd, &file) == 0 && file.st_nlink == 0)) {
        error = "process " + std::to_string(pid) + " ended before it answered";
        break;
      }
      const uint64_t now = now_ms();
      if (now >= deadline) {
        error = "process " + std::to_string(pid) + " did not answer within " + std::to_string(timeout_ms / 1000) +
                " s (it checks when it can; --timeout waits longer)";
        break;
      }
      wait_for_change(done_word, before, std::min<uint64_t>(deadline - now, 200));
    }
  }
  if (answered && pread(page.fd, &status, sizeof status, offsetof(ControlPage, check_status)) !=
                      static_cast<ssize_t>(sizeof status))
    status = authority::kCheckNotClassified;
  munmap(map, authority::kControlPageBytes);
  return answered;
}

}  // namespace leaseguard::cli
