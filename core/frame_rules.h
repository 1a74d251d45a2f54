// How to step from one x86-64 frame to its caller, read from the code's DWARF call frame
// information (.eh_frame) and cached per instruction address.
//
// Why not frame pointers alone: in code built without them, %rbp is an ordinary register,
// and a frame-pointer walk silently skips frames (or follows garbage). Why not the C++
// runtime's unwinder for every frame: it parses the CFI again at each step, ~100 ns a frame.
// The call frame information is right with or without frame pointers, and the rule it gives
// for one address never changes while its module is loaded, so it is parsed once per
// address and afterwards an unwinding step is a cache lookup and two loads.
#pragma once

#include <cstdint>

namespace leaseguard {

struct FrameRule {
  enum class Cfa : uint8_t {
    Unknown = 0,    // no usable rule: the caller falls back to the full DWARF unwinder
    StackPointer,   // CFA = %rsp + cfa_offset
    FramePointer,   // CFA = %rbp + cfa_offset
    Outermost,      // the return address is undefined: the stack ends here
  };
  int32_t cfa_offset = 0;
  int16_t rbp_offset = 0;  // with rbp_saved: the caller's %rbp is at CFA + rbp_offset
  Cfa cfa = Cfa::Unknown;
  bool rbp_saved = false;  // else %rbp is unchanged in the caller
  // The return address is at CFA - 8 (checked when the rule is made; anything else is Unknown).
};
static_assert(sizeof(FrameRule) == 8, "a rule is cached in one 64-bit word");

// The rule in effect at `pc`. For a return address, pass the address of the call
// instruction (return address - 1), as the unwinders do.
FrameRule frame_rule_at(uintptr_t pc) noexcept;

// The same, through a process-wide lock-free cache.
FrameRule cached_frame_rule_at(uintptr_t pc) noexcept;

}  // namespace leaseguard
