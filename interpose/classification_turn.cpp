// One classification at a time, and none after the exit's (see classification_turn.h).
#include "classification_turn.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>

#include "tracker.h"

namespace leaseguard::interpose {
namespace {

// Nothing here has a destructor: exit handlers run static destructors, and a lease on the
// watchdog may still take its turn after them.
//
// The turn is the process whose thread holds it (0: nobody's), not a mutex: a process forked
// while another of its parent's threads held the turn has a copy of the turn held by a thread
// it does not have, and its own exit's classification would wait for it for ever (a forked
// child that never exits). A turn held by another process is taken over; the fork handler
// frees it in the child as well, where a PID namespace could number the child as its parent.
std::atomic<int> g_turn_holder{0};
bool g_exit_turn = false;                     // the turn held now is the exit's
pid_t g_exit_classified_in = 0;               // the process whose exit classification has run (a forked
                                              // child's memory says its parent's until it exits itself)
AllocationClasses *g_exit_classes = nullptr;  // sorted by id; never freed (read until the end)
uint32_t g_exit_flags = 0;

static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free,
              "the turn is waited on as a futex word");

long futex(std::atomic<int> &word, int operation, int value) noexcept {
  return syscall(SYS_futex, reinterpret_cast<int *>(&word), operation | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}

// In a process that fork() made: nobody here holds the turn, and no classification of its
// own has begun. (The exit's classes kept in the parent are the parent's allocations'.)
void free_turn_in_child() noexcept {
  g_turn_holder.store(0, std::memory_order_relaxed);
  g_exit_turn = false;
  g_exit_classes = nullptr;
}

[[gnu::constructor]] void install_fork_handler() noexcept { pthread_atfork(nullptr, nullptr, free_turn_in_child); }

}  // namespace

ClassificationTurn::ClassificationTurn() noexcept {
  const int self = static_cast<int>(getpid());
  for (;;) {
    int holder = g_turn_holder.load(std::memory_order_acquire);
    if (holder != self) {
      // Free, or held in the process this one was copied from (a clone() that ran no fork
      // handler): the holding thread is not here, and what it left is the other process's.
      if (g_turn_holder.compare_exchange_weak(holder, self, std::memory_order_acquire)) {
        if (holder != 0) {  // what the other process's turn left is its own
          g_exit_turn = false;
          g_exit_classes = nullptr;
        }
        return;
      }
      continue;
    }
    futex(g_turn_holder, FUTEX_WAIT, holder);  // woken when it is given back (or at once if it was)
  }
}

ClassificationTurn::~ClassificationTurn() {
  if (g_exit_turn) g_exit_classified_in = getpid();
  g_exit_turn = false;
  g_turn_holder.store(0, std::memory_order_release);
  futex(g_turn_holder, FUTEX_WAKE, INT_MAX);
}

bool ClassificationTurn::after_exit() const noexcept { return g_exit_classified_in == getpid(); }

void ClassificationTurn::mark_exit() noexcept { g_exit_turn = true; }

void keep_if_exit(const AllocationClasses &classes, uint32_t flags) noexcept {
  if (!g_exit_turn) return;
  try {
    auto *kept = new AllocationClasses(classes);
    std::sort(kept->begin(), kept->end());
    delete g_exit_classes;
    g_exit_classes = kept;
    g_exit_flags = flags;
  } catch (...) {
    // No memory: a lease ending after the exit counts its allocations as leaked in its log
    // line; the report has the exit's classes from the journal all the same.
  }
}

void journal_exit_classes_of_lease(Tracker &tracker, uint32_t lease_id) noexcept {
  const AllocationClasses *kept = g_exit_classes;
  if (kept == nullptr || lease_id == 0) return;
  AllocationClasses classes;
  try {
    for (const Tracker::LiveMemory &live : tracker.live_memory(lease_id)) {
      auto found = std::lower_bound(kept->begin(), kept->end(), std::pair<uint64_t, uint8_t>{live.id, 0});
      if (found != kept->end() && found->first == live.id) classes.push_back(*found);
    }
  } catch (...) {
    return;
  }
  if (!classes.empty()) tracker.write_reachability(classes, g_exit_flags);
}

}  // namespace leaseguard::interpose
