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

#include <emmintrin.h>

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
WalkResult capture_stack_cached(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded, size_t &count,
                                const WalkStart &start = {}) noexcept;

// What one cached walk from a known start read from the stack: the start, and the address
// and value of every word it loaded. A walk is a function of its start, the cached rules
// and those words, so a later walk from the same start, while the code is unchanged, whose
// words still hold the same values would list the same frames: checking the words is all
// it costs (a loop that allocates from one place captures one stack again and again).
class WalkTrace {
 public:
  static constexpr size_t kMaxFrames = 64;             // walks deeper than this are not traced
  static constexpr size_t kMaxWords = 2 * kMaxFrames;  // a step loads at most two words
  WalkStart start;
  bool complete = false;  // the cached walk finished and every word it read is here
  // Whether the walk used the start's %rbp before loading another: in code without frame
  // pointers %rbp is an ordinary register, whose value from one call to the next says
  // nothing about the stack, and a walk that never used it does not depend on it.
  bool start_bp_used = false;
  bool bp_is_start = true;  // while walking: %rbp still holds the start's value

  // A new walk: nothing read yet.
  void clear() noexcept {
    complete = false;
    start_bp_used = false;
    bp_is_start = true;
    words_ = pairs_ = singles_ = 0;
    differed_ = kNone;
  }
  // One word the walk read (at most kMaxWords a walk).
  void note(uintptr_t address, uintptr_t value) noexcept {
    buffer_[2 * words_] = address;
    buffer_[2 * words_ + 1] = value;
    ++words_;
  }
  // Once the walk is done: the words as checks (see below).
  void fold() noexcept;

  // True if a walk from `from` now would read exactly what this one read. Inlined into the
  // search of a thread's last stacks, its one caller on the allocation path.
  __attribute__((always_inline)) bool still_holds(const WalkStart &from) const noexcept {
    if (!complete || from.pc != start.pc || from.sp != start.sp || (start_bp_used && from.bp != start.bp)) return false;
    if (differed_ != kNone && !holds(differed_)) return false;
    if (all_hold()) return true;
    remember_where_it_differs();
    return false;
  }

 private:
  // After fold(), buffer_ holds the pairs, then the single words. A pair is a frame's saved
  // %rbp and return address, side by side (as every frame with frame pointers has them; in
  // code without, a frame's return address is mostly alone): both values, then their
  // address and a word unused, so that the values are checked with one aligned 16-byte
  // comparison. A single word: its address, then its value. Check i is pair i below
  // pairs_, else single i - pairs_.
  //
  // Every check runs, without a branch between them, and their differences are gathered:
  // a walk that still holds (the common case) costs a few instructions a frame. The check
  // that failed last time runs first on its own: a thread allocating from two call chains
  // in turn checks each trace against the other chain's stack every other time, and they
  // differ in the same word each time, so those checks take one comparison.
  static constexpr size_t kNone = SIZE_MAX;
  static constexpr size_t kPairWords = 4;
  static constexpr size_t kSingleWords = 2;
  const uintptr_t *pair_at(size_t pair) const noexcept { return buffer_ + kPairWords * pair; }
  const uintptr_t *single_at(size_t single) const noexcept {
    return buffer_ + kPairWords * pairs_ + kSingleWords * single;
  }
  static __m128i pair_difference(const uintptr_t *pair) noexcept {
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i *>(pair[2]));
    return _mm_xor_si128(now, _mm_load_si128(reinterpret_cast<const __m128i *>(pair)));
  }
  static uintptr_t single_difference(const uintptr_t *single) noexcept {
    return *reinterpret_cast<const volatile uintptr_t *>(single[0]) ^ single[1];
  }
  static bool is_zero(__m128i difference) noexcept {
    return _mm_movemask_epi8(_mm_cmpeq_epi8(difference, _mm_setzero_si128())) == 0xFFFF;
  }
  bool holds(size_t check) const noexcept {
    return check < pairs_ ? is_zero(pair_difference(pair_at(check)))
                          : single_difference(single_at(check - pairs_)) == 0;
  }
  bool all_hold() const noexcept {
    __m128i pairs_differ = _mm_setzero_si128();
    const uintptr_t *const pairs_end = pair_at(pairs_);
#pragma GCC unroll 2
    for (const uintptr_t *pair = buffer_; pair != pairs_end; pair += kPairWords)
      pairs_differ = _mm_or_si128(pairs_differ, pair_difference(pair));
    uintptr_t singles_differ = 0;
    const uintptr_t *const singles_end = single_at(singles_);
#pragma GCC unroll 2
    for (const uintptr_t *single = pairs_end; single != singles_end; single += kSingleWords)
      singles_differ |= single_difference(single);
    return singles_differ == 0 && is_zero(pairs_differ);
  }
  // Out of line: only when the walk no longer holds.
  void remember_where_it_differs() const noexcept;

  size_t words_ = 0;  // while walking: words noted
  size_t pairs_ = 0;  // after fold()
  size_t singles_ = 0;
  mutable size_t differed_ = kNone;              // the check that failed last
  alignas(16) uintptr_t buffer_[2 * kMaxWords];  // while walking: (address, value) per word
};

// capture_stack from a known start (start.pc != 0), recording the walk into `trace`
// (trace.complete says whether the cached walk did it all, so that it can be reused).
size_t capture_stack_traced(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded, const WalkStart &start,
                            WalkTrace &trace) noexcept;

// The same with the C++ runtime's unwinder alone: the reference the fast walk is tested
// against, and its fallback.
size_t capture_stack_unwinder(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept;

}  // namespace leaseguard
