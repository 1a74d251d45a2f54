// Where the process-wide core is found: a word the kernel zeroes in every child process that
// does not share this one's memory, so that such a child, which no fork handler told, finds
// none and makes its own.
//
// fork() runs pthread_atfork handlers, which give a child its own core and journal; a raw
// clone() (without CLONE_VM) does not, and its child would go on appending to its parent's
// journal through a copy of the parent's counters, writing over the parent's records. The
// core's pointer is kept in a page advised MADV_WIPEONFORK (Linux 4.14): every hooked call
// loads it anyway, so telling a new process apart costs nothing more than where it is
// loaded from. Where the kernel refuses the advice, the pointer is kept in ordinary memory
// and only fork() children are told apart.
#pragma once

#include <cstdint>

namespace leaseguard {

class InstanceSlot {
 public:
  // What was stored, or nullptr: nothing yet, or this is a process made by a raw clone() of
  // one that had something (then was_wiped()). One load beyond the slot's address.
  static void *load() noexcept { return __atomic_load_n(g_slot, __ATOMIC_ACQUIRE); }
  // Stores `value` (in the page, made on the first store that can have one).
  static void store(void *value) noexcept;
  // What was last stored in this process or, in a child, in its parent before it was made:
  // in ordinary memory, which a child keeps.
  static void *last_stored() noexcept { return __atomic_load_n(&g_last_stored, __ATOMIC_ACQUIRE); }
  // True in a process made from one that had stored something, without a fork handler.
  static bool was_wiped() noexcept { return load() == nullptr && last_stored() != nullptr; }
  // In such a process: true for the one thread that is to store a new value; the others
  // wait here until it has, and get false.
  static bool claim() noexcept;

 private:
  static void **g_slot;  // the page's first word, or g_ordinary_slot
  static void *g_ordinary_slot;
  static void *g_last_stored;
};

}  // namespace leaseguard
