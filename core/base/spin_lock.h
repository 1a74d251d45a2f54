// A lock for critical sections of a few dozen instructions (a hash table probe): one atomic
// exchange to take, one store to release, where a mutex costs two atomic operations and a
// function call each way. A waiter spins briefly, then yields its time slice, so a holder
// that was preempted gets the CPU back.
#pragma once

#include <sched.h>

#include <atomic>

namespace leaseguard {

class SpinLock {
 public:
  void lock() noexcept {
    for (int attempt = 0; locked_.exchange(true, std::memory_order_acquire); ++attempt) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (attempt < 64) {
          __builtin_ia32_pause();
          ++attempt;
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace leaseguard
