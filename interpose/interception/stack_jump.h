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

  // Whether the frame at `address` (the stack pointer inside a call) is left behind: below
  // the target on the same stack, or on the alternate signal stack the handler runs on while
  // the target is not.
  bool leaves(uintptr_t address) const noexcept;

 private:
  bool on_alternate_stack(uintptr_t address) const noexcept { return address - alternate_low_ < alternate_bytes_; }

  uintptr_t target_;
  uintptr_t alternate_low_ = 0;    // the alternate signal stack, where the thread runs on it now
  uintptr_t alternate_bytes_ = 0;  // 0: not on one
};

// The stack pointer where it is called: one instruction, and nothing made to live in memory.
inline __attribute__((always_inline)) uintptr_t stack_pointer() noexcept {
#if defined(__x86_64__)
  uintptr_t pointer;
  asm volatile("mov %%rsp, %0" : "=r"(pointer));
  return pointer;
#else
  return reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
#endif
}

}  // namespace leaseguard::interpose
