// A longjmp out of a signal handler, and the frames it leaves behind.
//
// A handler that interrupted one of leaseguard's hooks or tracked heap calls can jump back
// past it (a timeout giving up on a stuck driver call: `siglongjmp` from SIGALRM). The call's
// end never runs, so the thread's count of calls in progress would stay raised: every later
// allocation on the thread would pass as a call nested in leaseguard's own and go unrecorded,
// and the exit would stand aside as if interrupted. The preload's longjmp family
// (jump_hooks.cpp) hands each jump's target here first, and the counts drop by the calls
// whose frames it leaves.
#pragma once

#include <cstdint>

namespace leaseguard::interpose {

class StackJump {
 public:
  // `target_stack_pointer`: the stack pointer the jump restores.
  explicit StackJump(uintptr_t target_stack_pointer) noexcept;

  // Whether the frame holding `address` (a local of the call) is left behind: below the
  // target on the same stack, or on the alternate signal stack the handler runs on while the
  // target is not.
  bool leaves(const void *address) const noexcept;

 private:
  bool on_alternate_stack(uintptr_t address) const noexcept { return address - alternate_low_ < alternate_bytes_; }

  uintptr_t target_;
  uintptr_t alternate_low_ = 0;    // the alternate signal stack, where the thread runs on it now
  uintptr_t alternate_bytes_ = 0;  // 0: not on one
};

// Called by the longjmp family with a jump's target: the thread's hooks and tracked heap calls
// that the jump leaves are taken as ended.
void jumping_to(const StackJump &jump) noexcept;

// Resolves the C library's longjmp family, from the preload's constructor (a jump from a
// signal handler must never be the first to look them up: dlsym takes the loader's lock).
void resolve_jump_functions() noexcept;

}  // namespace leaseguard::interpose
