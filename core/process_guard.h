// Tells, on the hot path, that this is no longer the process the core was made in.
//
// fork() runs pthread_atfork handlers, which give a child its own core and journal; a raw
// clone() (without CLONE_VM) does not, and its child would go on appending to its parent's
// journal through a copy of the parent's counters, writing over the parent's records. The
// guard is a word in a page the kernel zeroes in every child that does not share this
// process's memory (MADV_WIPEONFORK, Linux 4.14): armed (non-zero) here, it reads zero in
// such a child, at the cost of one load per hooked call. Where the kernel refuses the
// advice, the guard is off and only fork() children are told apart.
#pragma once

#include <cstdint>

namespace leaseguard {

class ProcessGuard {
 public:
  // Arms the guard for the calling process: at start, and in each new process once it has
  // its own core.
  static void arm() noexcept;
  // True in a process made from this one without the core's knowledge (the guard was armed
  // in an ancestor and wiped in it). One load.
  static bool wiped() noexcept {
    const uint64_t *word = g_word;
    return word != nullptr && __atomic_load_n(word, __ATOMIC_ACQUIRE) == kWiped;
  }
  // In such a process: true for the one thread that is to give it its own core (then arm()
  // when done); the others wait here until that is done, and get false.
  static bool claim() noexcept;

 private:
  static constexpr uint64_t kWiped = 0, kArmed = 1, kClaimed = 2;
  static uint64_t *g_word;
};

}  // namespace leaseguard
