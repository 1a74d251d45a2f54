// The wipe-on-fork slot of the process's core (see instance_slot.h).
#include "instance_slot.h"

#include <sched.h>
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

namespace leaseguard {
namespace {

constexpr uintptr_t kUnclaimed = 0, kClaimed = 1;  // the page's second word, in a wiped process

// A page the kernel wipes in children, or nullptr if it refuses the advice.
void **wipe_on_fork_page() noexcept {
  void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return nullptr;
  if (madvise(page, 4096, MADV_WIPEONFORK) != 0) {
    munmap(page, 4096);
    return nullptr;
  }
  return static_cast<void **>(page);
}

}  // namespace

void *InstanceSlot::g_ordinary_slot = nullptr;
void **InstanceSlot::g_slot = &InstanceSlot::g_ordinary_slot;
void *InstanceSlot::g_last_stored = nullptr;

void InstanceSlot::store(void *value) noexcept {
  if (g_slot == &g_ordinary_slot && value != nullptr) {
    if (void **page = wipe_on_fork_page()) __atomic_store_n(&g_slot, page, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&g_last_stored, value, __ATOMIC_RELEASE);
  __atomic_store_n(g_slot, value, __ATOMIC_RELEASE);
  if (g_slot != &g_ordinary_slot)
    __atomic_store_n(reinterpret_cast<uintptr_t *>(g_slot + 1), kUnclaimed, __ATOMIC_RELEASE);
}

bool InstanceSlot::claim() noexcept {
  auto *claim_word = reinterpret_cast<uintptr_t *>(g_slot + 1);
  uintptr_t expected = kUnclaimed;
  if (__atomic_compare_exchange_n(claim_word, &expected, kClaimed, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return true;
  while (load() == nullptr) sched_yield();
  return false;
}

}  // namespace leaseguard
