// The process guard (see process_guard.h).
#include "process_guard.h"

#include <sched.h>
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

namespace leaseguard {

uint64_t *ProcessGuard::g_word = nullptr;

void ProcessGuard::arm() noexcept {
  if (g_word == nullptr) {
    void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return;
    if (madvise(page, 4096, MADV_WIPEONFORK) != 0) {
      munmap(page, 4096);  // the kernel cannot wipe it: no guard (fork() children are still told apart)
      return;
    }
    g_word = static_cast<uint64_t *>(page);
  }
  __atomic_store_n(g_word, kArmed, __ATOMIC_RELEASE);
}

bool ProcessGuard::claim() noexcept {
  uint64_t expected = kWiped;
  if (__atomic_compare_exchange_n(g_word, &expected, kClaimed, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return true;
  while (__atomic_load_n(g_word, __ATOMIC_ACQUIRE) == kClaimed) sched_yield();
  return false;
}

}  // namespace leaseguard
