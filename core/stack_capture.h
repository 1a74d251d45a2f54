// Captures the calling thread's stack as return addresses.
//
// Correct for code built with or without frame pointers: each step follows the code's DWARF
// call frame information (frame_rules.h), cached per address, so after the first capture
// of a path a frame costs a cache lookup and a load or two. Where that rule is missing or
// unusual (a signal frame, a realigned stack, code without CFI, a thread on a stack of its
// own making) the whole capture is done by the C++ runtime's unwinder (_Unwind_Backtrace).
// Neither installs anything: the program's exception unwinding is untouched.
// Frames inside an excluded address range (the preload library itself) are dropped from the
// top, so a stack starts at the application's call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard {

struct CodeRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  bool contains(uintptr_t address) const { return address >= begin && address < end; }
};

// leaseguard's own code, whose frames are dropped from the top of a stack: the preload, and
// the C++ API library when the program uses it.
struct ExcludedCode {
  static constexpr int kRanges = 2;
  CodeRange ranges[kRanges];
  bool contains(uintptr_t address) const {
    for (const CodeRange &range : ranges)
      if (range.contains(address)) return true;
    return false;
  }
  void add(CodeRange range) {
    for (CodeRange &slot : ranges) {
      if (slot.begin == range.begin && slot.end == range.end) return;
      if (slot.begin == slot.end) {
        slot = range;
        return;
      }
    }
  }
};

// Writes at most `max_frames` return addresses into `frames`; returns how many.
size_t capture_stack(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept;

// The cached walk alone: Done, or NeedsFullUnwinder if some frame has no usable cached rule
// (then `frames` is incomplete).
enum class WalkResult { Done, NeedsFullUnwinder };
WalkResult capture_stack_cached(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded,
                                size_t &count) noexcept;

// The same with the C++ runtime's unwinder alone: the reference the fast walk is tested
// against, and its fallback.
size_t capture_stack_unwinder(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept;

}  // namespace leaseguard
