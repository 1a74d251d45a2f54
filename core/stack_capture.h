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

// Where the application's part of the stack begins, when the caller knows: the return
// address into the application and the registers it will have there (%rsp, %rbp). A hook
// reads them from its own frame, so the walk need not step through leaseguard's frames to
// find it. pc 0: not known (the walk starts here and drops the excluded frames).
struct WalkStart {
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  uintptr_t bp = 0;
};

// The start at the caller of the function whose frame pointer is `frame` (its
// `__builtin_frame_address(0)`, which also makes the compiler give it one): the caller's
// %rbp is saved at [frame], the return address at [frame + 8], and the caller's %rsp after
// the return is frame + 16.
inline WalkStart walk_start_above(const void *frame) noexcept {
  const auto *words = static_cast<const uintptr_t *>(frame);
  return WalkStart{words[1], reinterpret_cast<uintptr_t>(words + 2), words[0]};
}

// Writes at most `max_frames` return addresses into `frames`; returns how many.
size_t capture_stack(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded,
                     const WalkStart &start = {}) noexcept;

// The cached walk alone: Done, or NeedsFullUnwinder if some frame has no usable cached rule
// (then `frames` is incomplete).
enum class WalkResult { Done, NeedsFullUnwinder };
WalkResult capture_stack_cached(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded,
                                size_t &count, const WalkStart &start = {}) noexcept;

// What one cached walk from a known start read from the stack: the start, and the address
// and value of every word it loaded. A walk is a function of its start, the cached rules
// and those words, so a later walk from the same start, while the code is unchanged, whose
// words still hold the same values would list the same frames: checking the words is all
// it costs (a loop that allocates from one place captures one stack again and again).
struct WalkTrace {
  static constexpr size_t kMaxFrames = 64;           // walks deeper than this are not traced
  static constexpr size_t kMaxWords = 2 * kMaxFrames;  // a step loads at most two words
  WalkStart start;
  size_t words = 0;
  bool complete = false;  // the cached walk finished and every word it read is here
  // Whether the walk used the start's %rbp before loading another: in code without frame
  // pointers %rbp is an ordinary register, whose value from one call to the next says
  // nothing about the stack, and a walk that never used it does not depend on it.
  bool start_bp_used = false;
  bool bp_is_start = true;  // while walking: %rbp still holds the start's value
  // The word that differed the last time this trace was checked and did not hold. A thread
  // allocating from two call chains in turn checks each trace against the other chain's
  // stack every other time, and they differ in the same word each time: checking that word
  // first turns those checks into one comparison.
  mutable size_t differed_at = 0;
  uintptr_t address[kMaxWords];
  uintptr_t value[kMaxWords];

  // True if a walk from `from` now would read exactly what this one read.
  bool still_holds(const WalkStart &from) const noexcept {
    if (!complete || from.pc != start.pc || from.sp != start.sp || (start_bp_used && from.bp != start.bp)) return false;
    if (differed_at < words && *reinterpret_cast<const volatile uintptr_t *>(address[differed_at]) != value[differed_at])
      return false;
    // From the outermost frame in: two stacks from one place differ where their callers
    // do, further up than down here.
    size_t i = words;
    while (i > 0 && *reinterpret_cast<const volatile uintptr_t *>(address[i - 1]) == value[i - 1]) --i;
    if (i == 0) return true;
    differed_at = i - 1;
    return false;
  }
};

// capture_stack from a known start (start.pc != 0), recording the walk into `trace`
// (trace.complete says whether the cached walk did it all, so that it can be reused).
size_t capture_stack_traced(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded,
                            const WalkStart &start, WalkTrace &trace) noexcept;

// The same with the C++ runtime's unwinder alone: the reference the fast walk is tested
// against, and its fallback.
size_t capture_stack_unwinder(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept;

}  // namespace leaseguard
