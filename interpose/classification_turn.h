// One classification at a time, and none after the exit's.
//
// A lease's time-to-live can run out as the process exits: the lease's classification (on
// leaseguard's watchdog) and the exit's (on the exiting thread) then meet. Whichever takes
// its turn first runs while the other waits; a thread waiting for its turn says where
// leaseguard's frames on its stack end (waiting_classifiers.h), so the one running reads the
// program's part of it only. Once the exit's has run, exit handlers take the program apart
// (destructors of globals drop the pointers that held its memory): a classification after it
// would read what the program held as lost. So none runs after it, and a lease that was
// ending meanwhile ends with the exit's classes. Those covered its allocations: a lease lists
// its allocations as ended only after its classification returns, so they were among the
// live ones the exit's classification took.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace leaseguard {
class Tracker;
}

namespace leaseguard::interpose {

using AllocationClasses = std::vector<std::pair<uint64_t, uint8_t>>;  // (allocation id, class)

// Holds the turn from construction (it waits for it) to destruction.
class ClassificationTurn {
 public:
  ClassificationTurn() noexcept;
  ~ClassificationTurn();
  ClassificationTurn(const ClassificationTurn &) = delete;
  ClassificationTurn &operator=(const ClassificationTurn &) = delete;

  // Whether the exit's classification has run in this process: then nothing is classified.
  bool after_exit() const noexcept;
  // This turn is the exit's: the classes journaled in it are kept (keep_if_exit), and every
  // turn after it is after_exit().
  void mark_exit() noexcept;
};

// In the exit's turn, keeps a copy of the classes it journals (with their flags) for a lease
// that ends after it; elsewhere does nothing. Called with the turn held.
void keep_if_exit(const AllocationClasses &classes, uint32_t flags) noexcept;

// After the exit's classification: journals again, for lease `lease_id`, the classes it gave
// the allocations the lease still owns, so that the lease's ending counts them as the report
// does. Called with the turn held.
void journal_exit_classes_of_lease(Tracker &tracker, uint32_t lease_id) noexcept;

}  // namespace leaseguard::interpose
