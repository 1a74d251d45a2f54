#include "control_channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "control_page.h"

namespace leaseguard {
namespace {

// It classifies (a check) and ends leases (a reclaim) as the lease watchdog does: the same room.
constexpr size_t kControlStackBytes = size_t{512} << 10;

// How often the waiting thread looks whether the program's main thread has ended.
constexpr timespec kMainThreadLook{1, 0};

// Not FUTEX_PRIVATE_FLAG: the asker wakes it from another process, through the same file.
// False where it waited the whole time without a wake.
bool wait_while_zero(std::atomic<uint32_t> *word) noexcept {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, 0u, &kMainThreadLook, nullptr, 0) == 0 ||
         errno != ETIMEDOUT;
}
void wake_all(std::atomic<uint32_t> *word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

template <typename T>
std::atomic<T> *word_at(char *page, size_t offset) noexcept {
  return reinterpret_cast<std::atomic<T> *>(page + offset);
}

}  // namespace

bool ControlChannel::start(const std::string &journal_path, CheckHandler check, ReclaimHandler reclaim,
                           std::string &error) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (page_ != nullptr || stopped_) return true;  // started already, or the process is ending
    const std::string path = authority::control_path_of_journal(journal_path);
    if (path.empty()) {
      error = "no control page for " + journal_path + ": not a journal's name";
      return false;
    }
    // A new file, as the journal is: O_EXCL never opens one that was there, nor a link.
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      error = "cannot create the control page " + path + ": " + std::strerror(errno);
      return false;
    }
    void *map = MAP_FAILED;
    if (ftruncate(fd, authority::kControlPageBytes) == 0)
      map = mmap(nullptr, authority::kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int saved = errno;
    close(fd);  // the mapping is all it needs: a program that closes descriptors cannot take it away
    if (map == MAP_FAILED) {
      unlink(path.c_str());
      error = "cannot map the control page " + path + ": " + std::strerror(saved);
      return false;
    }
    authority::ControlPage page{};
    std::memcpy(page.magic, authority::kControlMagic, sizeof page.magic);
    page.version = authority::kControlVersion;
    page.pid = getpid();
    std::memcpy(map, &page, sizeof page);
    path_ = path;
    check_ = std::move(check);
    reclaim_ = std::move(reclaim);
    page_ = static_cast<char *>(map);
    request_ = word_at<uint32_t>(page_, authority::kControlRequestOffset);
    if (!start_thread_locked()) {
      error = "cannot start a thread to wait on the control page " + path;
      return false;
    }
    return true;
  } catch (...) {
    error = "no memory for the control page";
    return false;
  }
}

bool ControlChannel::start_thread_locked() noexcept {
  leaving_.store(false, std::memory_order_release);
  return thread_.start("leaseguard-ctl", kControlStackBytes, [this] { serve(); });
}

void ControlChannel::join_thread_locked() noexcept {
  if (!thread_.joinable() || thread_.is_current()) return;
  // The wait compares the word, so leaving must change it: a wake alone could come between
  // the thread's look at the word and its wait, and be lost. A request already there is
  // served first; `leaving_` sends the thread out when it finds the word 0 again after it.
  leaving_.store(true, std::memory_order_release);
  uint32_t idle = 0;
  request_->compare_exchange_strong(idle, authority::kControlLeave, std::memory_order_acq_rel);
  wake_all(request_);
  thread_.join();
}

void ControlChannel::serve() noexcept {
  for (;;) {
    uint32_t request = request_->load(std::memory_order_acquire);
    if (request == 0) {
      if (leaving_.load(std::memory_order_acquire)) return;
      // Returns at once if the word changed; a wake may be spurious. Woken by nothing, it looks
      // at the main thread: once it has ended, the process ends with its last thread, and a
      // thread of ours must not be that thread (glibc ends the process when the last thread it
      // made ends, ours counted): the channel closes, and checks are no longer answered.
      if (!wait_while_zero(request_) && BackgroundThread::main_thread_ended()) {
        served_.store(true, std::memory_order_release);  // not started again
        return;
      }
      continue;
    }
    if (request == authority::kControlLeave) return;
    if (request == authority::kControlCheck) {
      // Taken before it runs: a check written while one runs gets a check of its own.
      if (request_->compare_exchange_strong(request, 0, std::memory_order_acq_rel)) answer_check();
      continue;
    }
    if ((request & ~authority::kControlReasonMask) == authority::kControlReclaim && reclaim_) {
      served_.store(true, std::memory_order_release);
      reclaim_(request);
      return;  // one reclaim per process image
    }
    // A word this process does not take (a reclaim outside an authority lease, a newer
    // asker's): cleared, so that the next request is seen.
    request_->compare_exchange_strong(request, 0, std::memory_order_acq_rel);
  }
}

void ControlChannel::answer_check() noexcept {
  const int32_t status = check_ ? check_() : authority::kCheckNotClassified;
  word_at<int32_t>(page_, offsetof(authority::ControlPage, check_status))->store(status, std::memory_order_relaxed);
  auto *done = word_at<uint32_t>(page_, authority::kControlChecksDoneOffset);
  done->fetch_add(1, std::memory_order_release);
  wake_all(done);
}

void ControlChannel::suspend() noexcept {
  std::lock_guard lock(mutex_);
  if (page_ != nullptr) join_thread_locked();
}

void ControlChannel::resume() noexcept {
  std::lock_guard lock(mutex_);
  if (page_ == nullptr || stopped_ || served_.load(std::memory_order_acquire)) return;
  uint32_t leave = authority::kControlLeave;
  request_->compare_exchange_strong(leave, 0, std::memory_order_acq_rel);
  start_thread_locked();
}

void ControlChannel::stop() noexcept {
  std::lock_guard lock(mutex_);
  if (stopped_) return;
  stopped_ = true;
  if (page_ == nullptr) return;
  join_thread_locked();
  // An asker that opened it already finds the process gone; a new one finds no page.
  unlink(path_.c_str());
}

}  // namespace leaseguard
