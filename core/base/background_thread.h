// leaseguard's own threads (the journal's page-fault thread, the lease watchdog): small
// stacks, and every signal blocked.
//
// Why not std::thread: its stack is the process default (RLIMIT_STACK, usually 8 MiB of
// address space), which counts against a program's `ulimit -v` for work that needs a few
// pages; and a thread of ours must never be the one a process-directed signal (SIGTERM,
// SIGCHLD, SIGALRM, the program's timers) is delivered to, which would run the program's
// handler on a thread the program does not know. Tests: HostSafety.* (docs/reliability.md).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>

namespace leaseguard {

class BackgroundThread {
 public:
  // The most of them running at once that running_thread_ids reports: room enough for every
  // kind leaseguard starts.
  static constexpr size_t kMaxRunning = 16;

  BackgroundThread() = default;
  ~BackgroundThread();  // joins, if still running
  BackgroundThread(const BackgroundThread &) = delete;
  BackgroundThread &operator=(const BackgroundThread &) = delete;

  // Starts `body` on a new thread named `name` (at most 15 characters) with a stack of
  // `stack_bytes` (more under sanitizers, which need it). False if no thread could be made.
  bool start(const char *name, size_t stack_bytes, std::function<void()> body) noexcept;
  bool joinable() const noexcept { return started_; }
  // True on the thread itself.
  bool is_current() const noexcept;
  void join() noexcept;
  // The thread ids of every BackgroundThread running in the process (at most `capacity`;
  // kMaxRunning is room for all):
  // the threads a scan of the program's memory leaves alone (interpose/scan/world_stop.h).
  static size_t running_thread_ids(pid_t *out, size_t capacity) noexcept;
  // The program's main thread has ended (pthread_exit from main): a zombie, or gone. A
  // thread of ours that waits must then leave: glibc ends a process when the last thread it
  // made ends, ours counted, and ours block every signal, so the process would outlive the
  // program's last thread, deaf even to SIGTERM. One read of /proc/self/task/PID/stat.
  static bool main_thread_ended() noexcept;
  // Forgets the thread without joining it: for a forked child, where it does not exist.
  void forget() noexcept {
    started_ = false;
    tid_.store(0, std::memory_order_relaxed);
  }

 private:
  static void *run(void *self) noexcept;

  pthread_t thread_{};
  std::atomic<pid_t> tid_{0};  // the kernel's id of the thread, once it runs
  bool started_ = false;
  std::function<void()> body_;
};

}  // namespace leaseguard
