// A process's side of the control page (the file STEM.control beside its journal,
// tools/authority/protocol/control_page.h) and the thread that waits on it: how `leaseguard
// check PID` asks for a live check, and the node lease authority for its reclaim stage.
//
// Every process that opens a journal has one: a process that never recorded holds nothing to
// check or give back. The thread sleeps in the kernel (a futex on the shared page) until a
// request is written. A check it serves and waits again; a reclaim (only in a process of an
// authority lease: LEASEGUARD_AUTHORITY_LEASE) ends the process's leases with their memory
// given back and journals the answer; then the thread ends. It is one of leaseguard's
// background threads (small stack, every signal blocked), joined around unshare()/setns() and
// at exit like the others. It wakes once a second to look whether the program's main thread
// has ended (pthread_exit from main): then it ends, so as not to be the thread that keeps the
// process alive after the program's last one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "background_thread.h"

namespace leaseguard {

class ControlChannel {
 public:
  // Called on the control thread with the request word (authority::kControlReclaim | reason).
  using ReclaimHandler = std::function<void(uint32_t request)>;
  // Called on the control thread for a check: authority::kCheckDone or another kCheck* status.
  using CheckHandler = std::function<int32_t()>;

  ControlChannel() = default;
  ~ControlChannel() { stop(); }
  ControlChannel(const ControlChannel &) = delete;
  ControlChannel &operator=(const ControlChannel &) = delete;

  // Creates the control page for the journal at `journal_path` (a new file: never one that
  // was there, never through a link) and starts the thread. `reclaim` may be empty: reclaim
  // requests are then not taken. False with `error` if either cannot be done; the process
  // then runs on, unreachable by checks (and by the authority's reclaim: its teardown's later
  // stages end it).
  bool start(const std::string &journal_path, CheckHandler check, ReclaimHandler reclaim, std::string &error) noexcept;
  // Joins the thread and starts it again (around a system call that a multithreaded process
  // may not make): a request written meanwhile waits in the page and is taken on resuming.
  void suspend() noexcept;
  void resume() noexcept;
  // Joins the thread for good and removes the page (at exit: no thread of ours outlives
  // recording, and nothing is left to ask). A request being served is finished first.
  void stop() noexcept;

  const std::string &path() const noexcept { return path_; }

 private:
  void serve() noexcept;
  void answer_check() noexcept;
  bool start_thread_locked() noexcept;
  void join_thread_locked() noexcept;

  std::mutex mutex_;
  std::string path_;
  char *page_ = nullptr;                      // the shared mapping; never unmapped
  std::atomic<uint32_t> *request_ = nullptr;  // in it
  std::atomic<bool> leaving_{false};          // the thread is being joined
  std::atomic<bool> served_{false};           // a reclaim was taken, or main ended: not started again
  bool stopped_ = false;
  CheckHandler check_;
  ReclaimHandler reclaim_;
  BackgroundThread thread_;
};

}  // namespace leaseguard
