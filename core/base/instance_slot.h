// Where the process-wide core is found: a word the kernel zeroes in every child process that
// does not share this one's memory, so that such a child, which no fork handler told, finds
// none and makes its own.
//
// fork() runs pthread_atfork handlers, which give a child its own core and journal; a raw
// clone() (without CLONE_VM) does not, and its child would go on appending to its parent's
// journal through a copy of the parent's counters, writing over the parent's records. The
// core's pointer is kept in a page advised MADV_WIPEONFORK (Linux 4.14). The page is a
// page-aligned, page-sized static array: it lies past the end of the image's file-backed
// data, in the zero-filled anonymous memory the loader maps for .bss, which the kernel
// accepts the advice for; and every hooked call finds it as it would any static, with one
// load. Where the kernel refuses the advice, the page is ordinary memory and only fork()
// children are told apart.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard {

class InstanceSlot {
 public:
  static constexpr size_t kPageBytes = 4096;

  // What was stored, or nullptr: nothing yet, or this is a process made by a raw clone() of
  // one that had something (then was_wiped()).
  static void *load() noexcept { return __atomic_load_n(&g_page.words[kValueWord], __ATOMIC_ACQUIRE); }
  // Stores `value` (advising the page on the first store that can have one).
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
  static constexpr size_t kValueWord = 0, kClaimWord = 1;
  struct alignas(kPageBytes) Page {
    void *words[kPageBytes / sizeof(void *)];
  };
  static_assert(sizeof(Page) == kPageBytes, "the page holds nothing but the slot's words");

  static Page g_page;  // zero-initialized: in .bss, never in the file-backed part of the image
  static void *g_last_stored;
  static bool g_advised;
};

}  // namespace leaseguard
