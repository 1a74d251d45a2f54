// One classification at a time, and none after the exit's (see classification_turn.h).
#include "classification_turn.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "tracker.h"

namespace leaseguard::interpose {
namespace {

// Nothing here has a destructor: exit handlers run static destructors, and a lease on the
// watchdog may still take its turn after them.
std::mutex g_turn;
bool g_exit_turn = false;                     // the turn held now is the exit's
pid_t g_exit_classified_in = 0;               // the process whose exit classification has run (a forked
                                              // child's memory says its parent's until it exits itself)
AllocationClasses *g_exit_classes = nullptr;  // sorted by id; never freed (read until the end)
uint32_t g_exit_flags = 0;

}  // namespace

ClassificationTurn::ClassificationTurn() noexcept { g_turn.lock(); }

ClassificationTurn::~ClassificationTurn() {
  if (g_exit_turn) g_exit_classified_in = getpid();
  g_exit_turn = false;
  g_turn.unlock();
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
