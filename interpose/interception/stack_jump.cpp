// Which frames a jump leaves behind (stack_jump.h).
#include "stack_jump.h"

#include <csignal>

namespace leaseguard::interpose {

StackJump::StackJump(uintptr_t target_stack_pointer) noexcept : target_(target_stack_pointer) {
  stack_t alternate{};
  if (sigaltstack(nullptr, &alternate) == 0 && (alternate.ss_flags & SS_ONSTACK) != 0) {
    alternate_low_ = reinterpret_cast<uintptr_t>(alternate.ss_sp);
    alternate_bytes_ = alternate.ss_size;
  }
}

bool StackJump::leaves(uintptr_t frame) const noexcept {
  const bool target_on_alternate = on_alternate_stack(target_);
  if (on_alternate_stack(frame) != target_on_alternate) return !target_on_alternate;
  return frame < target_;  // stacks grow down: a frame below the target is a callee's
}

}  // namespace leaseguard::interpose
