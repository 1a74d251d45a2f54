// leaseguard's own threads (see background_thread.h).
#include "background_thread.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <utility>

namespace leaseguard {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The thread ids of leaseguard's threads now running: few (two per process), found without
// a lock by a scan that has stopped every other thread.
std::atomic<pid_t> g_running[BackgroundThread::kMaxRunning];

}  // namespace

size_t BackgroundThread::running_thread_ids(pid_t *out, size_t capacity) noexcept {
  size_t count = 0;
  for (const auto &slot : g_running)
    if (const pid_t tid = slot.load(std::memory_order_acquire); tid != 0 && count < capacity) out[count++] = tid;
  return count;
}

BackgroundThread::~BackgroundThread() { join(); }

bool BackgroundThread::start(const char *name, size_t stack_bytes, std::function<void()> body) noexcept {
  if (started_) return false;
  try {
    body_ = std::move(body);
  } catch (...) {
    return false;
  }
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) return false;
  // Sanitizers keep shadow and fake frames on the stack: leave them the default.
  if (!kSanitized) pthread_attr_setstacksize(&attributes, stack_bytes);
  // Created with every signal blocked, so none is ever delivered to it (it inherits the mask).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int created = pthread_create(&thread_, &attributes, &BackgroundThread::run, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attributes);
  if (created != 0) return false;
  started_ = true;
  pthread_setname_np(thread_, name);
  return true;
}

bool BackgroundThread::is_current() const noexcept { return started_ && pthread_equal(thread_, pthread_self()); }

void BackgroundThread::join() noexcept {
  if (!started_ || is_current()) return;
  pthread_join(thread_, nullptr);
  // pthread_join returns when the kernel clears the thread's id, which it does before it
  // takes the thread out of the process's thread group: for a moment the process still has
  // it, and a call that needs a single-threaded process (unshare(CLONE_NEWUSER), the reason
  // threads are joined around it) fails with EINVAL. Wait for the kernel to finish: the
  // thread is gone when /proc no longer lists it. Not by signalling it (signal 0): a program's
  // seccomp filter may deny tgkill, and kill the process for the try. Bounded, in case the id
  // was given to a new thread of the process meanwhile.
  // Without /proc (a chroot), signal 0 is the only way left to ask.
  if (const pid_t tid = tid_.exchange(0, std::memory_order_acq_rel); tid > 0) {
    char path[48];
    std::snprintf(path, sizeof path, "/proc/self/task/%d", static_cast<int>(tid));
    const bool have_proc = access("/proc/self/task", F_OK) == 0;
    for (int tries = 0; tries < 1'000'000; ++tries) {
      const bool listed = have_proc ? access(path, F_OK) == 0 : syscall(SYS_tgkill, getpid(), tid, 0) == 0;
      if (!listed) break;
      sched_yield();
    }
  }
  started_ = false;
}

bool BackgroundThread::main_thread_ended() noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(getpid()));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  // Gone from a /proc that lists the process's threads; without /proc (a chroot) or with no
  // descriptor left, it cannot be told, and the thread stays.
  if (fd < 0) return errno == ENOENT && access("/proc/self/task", F_OK) == 0;
  char line[512];
  const ssize_t got = read(fd, line, sizeof line - 1);
  close(fd);
  if (got <= 0) return false;
  line[got] = '\0';
  // The state is the field after the command's closing parenthesis (the command may hold one).
  const char *end_of_command = std::strrchr(line, ')');
  return end_of_command != nullptr && (end_of_command[2] == 'Z' || end_of_command[2] == 'X');
}

void *BackgroundThread::run(void *self) noexcept {
  auto *thread = static_cast<BackgroundThread *>(self);
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  thread->tid_.store(tid, std::memory_order_release);
  std::atomic<pid_t> *registered = nullptr;
  for (auto &slot : g_running) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
      registered = &slot;
      break;
    }
  }
  thread->body_();
  if (registered != nullptr) registered->store(0, std::memory_order_release);
  return nullptr;
}

}  // namespace leaseguard
