// A process's side of the node lease authority's reclaim stage: its control page (the file
// STEM.control beside its journal, tools/authority/protocol/authority_protocol.h) and the thread that waits on it.
//
// Only a process of a lease of the authority has one (LEASEGUARD_AUTHORITY_LEASE is set), made
// when its journal opens: a process that never recorded holds nothing to give back. The
// thread sleeps in the kernel (a futex on the shared page) until the daemon writes a request,
// then calls the handler once, which ends the process's leases with their memory given back
// and journals the answer; then it ends. It is one of leaseguard's background threads (small
// stack, every signal blocked), joined around unshare()/setns() and at exit like the others.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "background_thread.h"

namespace leaseguard {

class AuthorityControl {
 public:
  // Called on the control thread with the request word (authority::kControlReclaim | reason).
  using Handler = std::function<void(uint32_t request)>;

  AuthorityControl() = default;
  ~AuthorityControl() { stop(); }
  AuthorityControl(const AuthorityControl &) = delete;
  AuthorityControl &operator=(const AuthorityControl &) = delete;

  // Creates the control page for the journal at `journal_path` (a new file: never one that
  // was there, never through a link) and starts the thread. False with `error` if either
  // cannot be done; the process then runs on, and the teardown's later stages end it.
  bool start(const std::string &journal_path, Handler handler, std::string &error) noexcept;
  // Joins the thread and starts it again (around a system call that a multithreaded process
  // may not make): a request written meanwhile waits in the page and is taken on resuming.
  void suspend() noexcept;
  void resume() noexcept;
  // Joins the thread for good (at exit: no thread of ours outlives recording). A request
  // being served is finished first.
  void stop() noexcept;

  const std::string &path() const noexcept { return path_; }

 private:
  void serve() noexcept;
  bool start_thread_locked() noexcept;
  void join_thread_locked() noexcept;

  std::mutex mutex_;
  std::string path_;
  std::atomic<uint32_t> *request_ = nullptr;  // in the shared mapping; never unmapped
  std::atomic<bool> served_{false};           // a request was taken: the thread is not needed again
  bool stopped_ = false;
  Handler handler_;
  BackgroundThread thread_;
};

}  // namespace leaseguard
