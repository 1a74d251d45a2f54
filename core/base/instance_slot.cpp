// The wipe-on-fork slot of the process's core (see instance_slot.h).
#include "instance_slot.h"

#include <sched.h>
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

namespace leaseguard {
namespace {
constexpr uintptr_t kUnclaimed = 0, kClaimed = 1;  // the claim word, in a wiped process
}  // namespace

InstanceSlot::Page InstanceSlot::g_page;
void *InstanceSlot::g_last_stored = nullptr;
bool InstanceSlot::g_advised = false;

void InstanceSlot::store(void *value) noexcept {
  // Once per process image (a forked child inherits the advice with the page). A kernel that
  // refuses it leaves an ordinary page: raw clone() children are then not told apart.
  if (!g_advised && value != nullptr) {
    madvise(&g_page, kPageBytes, MADV_WIPEONFORK);
    g_advised = true;
  }
  __atomic_store_n(&g_last_stored, value, __ATOMIC_RELEASE);
  __atomic_store_n(&g_page.words[kValueWord], value, __ATOMIC_RELEASE);
  __atomic_store_n(reinterpret_cast<uintptr_t *>(&g_page.words[kClaimWord]), kUnclaimed, __ATOMIC_RELEASE);
}

bool InstanceSlot::claim() noexcept {
  auto *claim_word = reinterpret_cast<uintptr_t *>(&g_page.words[kClaimWord]);
  uintptr_t expected = kUnclaimed;
  if (__atomic_compare_exchange_n(claim_word, &expected, kClaimed, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return true;
  while (load() == nullptr) sched_yield();
  return false;
}

}  // namespace leaseguard
