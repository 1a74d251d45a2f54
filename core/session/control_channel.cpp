#include "authority_control.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "authority_protocol.h"

namespace leaseguard {
namespace {

// It ends leases as the lease watchdog does (a classification, the driver's frees): the same room.
constexpr size_t kControlStackBytes = size_t{512} << 10;

// Not FUTEX_PRIVATE_FLAG: the daemon wakes it from another process, through the same file.
void wait_while_zero(std::atomic<uint32_t> *word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, 0u, nullptr, nullptr, 0);
}
void wake_all(std::atomic<uint32_t> *word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace

bool AuthorityControl::start(const std::string &journal_path, Handler handler, std::string &error) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (request_ != nullptr || stopped_) return true;  // started already, or the process is ending
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
    std::memcpy(map, &page, sizeof page);
    path_ = path;
    handler_ = std::move(handler);
    request_ = reinterpret_cast<std::atomic<uint32_t> *>(static_cast<char *>(map) + authority::kControlRequestOffset);
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

bool AuthorityControl::start_thread_locked() noexcept {
  return thread_.start("leaseguard-ctl", kControlStackBytes, [this] { serve(); });
}

void AuthorityControl::join_thread_locked() noexcept {
  if (!thread_.joinable() || thread_.is_current()) return;
  // The wait compares the word, so leaving must change it: a wake alone could come between
  // the thread's look at the word and its wait, and be lost. A request already there is
  // served first.
  uint32_t idle = 0;
  request_->compare_exchange_strong(idle, authority::kControlLeave, std::memory_order_acq_rel);
  wake_all(request_);
  thread_.join();
}

void AuthorityControl::serve() noexcept {
  for (;;) {
    const uint32_t request = request_->load(std::memory_order_acquire);
    if (request == 0) {
      wait_while_zero(request_);  // returns at once if the word changed; a wake may be spurious
      continue;
    }
    if (request == authority::kControlLeave) return;
    served_.store(true, std::memory_order_release);
    if ((request & ~authority::kControlReasonMask) == authority::kControlReclaim) handler_(request);
    return;  // one request per process image
  }
}

void AuthorityControl::suspend() noexcept {
  std::lock_guard lock(mutex_);
  if (request_ != nullptr) join_thread_locked();
}

void AuthorityControl::resume() noexcept {
  std::lock_guard lock(mutex_);
  if (request_ == nullptr || stopped_ || served_.load(std::memory_order_acquire)) return;
  uint32_t leave = authority::kControlLeave;
  request_->compare_exchange_strong(leave, 0, std::memory_order_acq_rel);
  start_thread_locked();
}

void AuthorityControl::stop() noexcept {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  if (request_ != nullptr) join_thread_locked();
}

}  // namespace leaseguard
