// Threads inside leaseguard on their way to classify (see waiting_classifiers.h).
#include "waiting_classifiers.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace leaseguard::interpose {
namespace {

// More threads than this on their way at once is a program ending many leases on many threads
// at one moment; the rest are read as any thread.
constexpr int kSlots = 16;
constexpr pid_t kClaimed = -1;  // being filled in: not read yet

// Two copies, the one in use flipped after the other is written: a thread stopped while it
// refines its place leaves the one in use whole.
struct Slot {
  std::atomic<pid_t> tid{0};
  std::atomic<int> current{0};
  CallerStack callers[2];
};
Slot g_slots[kSlots];

}  // namespace

WaitingClassifier::WaitingClassifier(uintptr_t caller_frame) noexcept {
  if (caller_frame == 0) return;  // leaseguard's own thread: never stopped, never read
  for (int i = 0; i < kSlots; ++i) {
    pid_t free_slot = 0;
    Slot &slot = g_slots[i];
    if (!slot.tid.compare_exchange_strong(free_slot, kClaimed, std::memory_order_acquire)) continue;
    CallerStack &first = slot.callers[0];
    first = CallerStack{};
    first.begin = caller_frame;
    slot.current.store(0, std::memory_order_relaxed);
    slot.tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    slot_ = i;
    return;
  }
}

void WaitingClassifier::refine(const CallerStack &caller) noexcept {
  if (slot_ < 0 || !caller.found) return;
  Slot &slot = g_slots[slot_];
  const int next = 1 - slot.current.load(std::memory_order_relaxed);
  slot.callers[next] = caller;
  slot.current.store(next, std::memory_order_release);
}

void WaitingClassifier::withdraw() noexcept {
  if (slot_ < 0) return;
  g_slots[slot_].tid.store(0, std::memory_order_release);
  slot_ = -1;
}

bool waiting_caller(pid_t tid, CallerStack &caller) noexcept {
  if (tid <= 0) return false;
  for (Slot &slot : g_slots)
    if (slot.tid.load(std::memory_order_acquire) == tid) {
      caller = slot.callers[slot.current.load(std::memory_order_acquire)];
      return true;
    }
  return false;
}

}  // namespace leaseguard::interpose
