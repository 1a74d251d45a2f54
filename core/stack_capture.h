// Captures the calling thread's stack as return addresses.
//
// Uses the DWARF unwinder of the C++ runtime (_Unwind_Backtrace), which is correct for code
// built with or without frame pointers. Frames inside an excluded address range (the preload
// library itself) are dropped from the top, so a stack starts at the application's call.
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

}  // namespace leaseguard
