// Stack capture: a walk driven by cached call frame information, with the C++ runtime's
// unwinder behind it for anything the cache cannot step.
#include "stack_capture.h"

#include <pthread.h>
#include <unwind.h>

#include <cstring>

#include "frame_rules.h"

namespace leaseguard {
namespace {

// ---- the full unwinder (slow, always right) ----

struct Walk {
  uintptr_t *frames;
  size_t max_frames;
  size_t count;
  const ExcludedCode &excluded;
  bool skipping_top;
};

_Unwind_Reason_Code visit(struct _Unwind_Context *context, void *argument) {
  auto *walk = static_cast<Walk *>(argument);
  auto ip = static_cast<uintptr_t>(_Unwind_GetIP(context));
  if (ip == 0) return _URC_END_OF_STACK;
  if (walk->skipping_top) {
    // Our own frames (capture, tracker, hook) come first; the first foreign frame is the
    // application's call into the driver API.
    if (walk->excluded.contains(ip)) return _URC_NO_REASON;
    walk->skipping_top = false;
  }
  walk->frames[walk->count++] = ip;
  return walk->count == walk->max_frames ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// ---- the cached walk ----

// The calling thread's stack, where every load of the walk must fall. A thread running on
// another stack (a coroutine, a signal stack) is walked by the full unwinder instead.
struct StackBounds {
  uintptr_t low = 0;
  uintptr_t high = 0;
  bool known = false;
  bool unavailable = false;
};
thread_local StackBounds t_bounds __attribute__((tls_model("initial-exec")));  // see tracker.cpp

const StackBounds &thread_stack_bounds() noexcept {
  if (!t_bounds.known && !t_bounds.unavailable) {
    pthread_attr_t attributes;
    void *address = nullptr;
    size_t bytes = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      if (pthread_attr_getstack(&attributes, &address, &bytes) == 0 && bytes != 0) {
        t_bounds.low = reinterpret_cast<uintptr_t>(address);
        t_bounds.high = t_bounds.low + bytes;
        t_bounds.known = true;
      }
      pthread_attr_destroy(&attributes);
    }
    t_bounds.unavailable = !t_bounds.known;
  }
  return t_bounds;
}

// Enough for any real stack: how many of leaseguard's own frames a walk may skip.
constexpr int kMaxSteps = 512;

enum class Step { Stepped, Outermost, NeedsFullUnwinder };

// The registers a step of the walk recovers, and the highest addresses a saved word, or a
// pair of them, may start at within the stack.
struct WalkState {
  uintptr_t sp;
  uintptr_t bp;
  uintptr_t last_word;
  uintptr_t last_pair;
};

// Reads the stack word at `address`, noting it in `trace` when the walk is traced.
template <bool kTraced>
__attribute__((always_inline)) inline uintptr_t load_word(uintptr_t address, WalkTrace *trace) noexcept {
  const uintptr_t value = *reinterpret_cast<const uintptr_t *>(address);
  if constexpr (kTraced) trace->note(address, value);
  return value;
}

// Notes, when the walk is traced, that %rbp is used here: if it is still the start's, the
// walk depends on the start's %rbp.
template <bool kTraced>
__attribute__((always_inline)) inline void note_bp_use(WalkTrace *trace) noexcept {
  if constexpr (kTraced) trace->start_bp_used |= trace->bp_is_start;
}
template <bool kTraced>
__attribute__((always_inline)) inline void note_bp_loaded(WalkTrace *trace) noexcept {
  if constexpr (kTraced) trace->bp_is_start = false;
}

// Steps from the frame whose code is at `rule_pc` to its caller: `walk` then holds the
// caller's stack and frame pointers, and `return_address` where the caller resumes. Each
// load must lie between the frame's stack pointer and the stack's top, so the stack pointer
// rises with every step and a walk always ends. Inlined into both of the walk's loops.
template <bool kTraced>
__attribute__((always_inline)) inline Step step_frame(uintptr_t rule_pc, WalkState &walk, uintptr_t &return_address,
                                                      WalkTrace *trace) noexcept {
  const PackedFrameRule rule = cached_frame_rule_at(rule_pc);
  if (rule.is_frame_pointer_frame()) {
    // The caller's %rbp and the return address are the two words at %rbp.
    note_bp_use<kTraced>(trace);
    if (walk.bp < walk.sp || walk.bp > walk.last_pair) return Step::NeedsFullUnwinder;
    const uintptr_t frame = walk.bp;
    return_address = load_word<kTraced>(frame + sizeof(uintptr_t), trace);
    walk.bp = load_word<kTraced>(frame, trace);
    note_bp_loaded<kTraced>(trace);
    walk.sp = frame + 2 * sizeof(uintptr_t);
    return Step::Stepped;
  }
  if (rule.is_stack_pointer_frame()) {
    const uintptr_t cfa = walk.sp + static_cast<intptr_t>(rule.cfa_offset());
    const uintptr_t return_address_at = cfa - sizeof(uintptr_t);  // the return address is at cfa - 8
    if (return_address_at < walk.sp || return_address_at > walk.last_word) return Step::NeedsFullUnwinder;
    return_address = load_word<kTraced>(return_address_at, trace);
    walk.sp = cfa;
    return Step::Stepped;
  }
  const FrameRule::Cfa cfa_rule = rule.cfa();
  if (cfa_rule != FrameRule::Cfa::StackPointer && cfa_rule != FrameRule::Cfa::FramePointer)
    return cfa_rule == FrameRule::Cfa::Outermost ? Step::Outermost : Step::NeedsFullUnwinder;
  if (cfa_rule == FrameRule::Cfa::FramePointer) note_bp_use<kTraced>(trace);
  const uintptr_t cfa =
      (cfa_rule == FrameRule::Cfa::StackPointer ? walk.sp : walk.bp) + static_cast<intptr_t>(rule.cfa_offset());
  // The return address is at cfa - 8.
  const uintptr_t return_address_at = cfa - sizeof(uintptr_t);
  if (return_address_at < walk.sp || return_address_at > walk.last_word) return Step::NeedsFullUnwinder;
  return_address = load_word<kTraced>(return_address_at, trace);
  if (rule.rbp_saved()) {
    const uintptr_t saved_at = cfa + static_cast<intptr_t>(rule.rbp_offset());
    if (saved_at < walk.sp || saved_at > walk.last_word) return Step::NeedsFullUnwinder;
    walk.bp = load_word<kTraced>(saved_at, trace);
    note_bp_loaded<kTraced>(trace);
  }
  walk.sp = cfa;
  return Step::Stepped;
}

template <bool kTraced>
__attribute__((always_inline)) inline WalkResult walk_cached(uintptr_t *frames, size_t max_frames,
                                                             const ExcludedCode &excluded, size_t &count_out,
                                                             const WalkStart &start, WalkTrace *trace) noexcept {
  count_out = 0;
  if (max_frames == 0) return WalkResult::Done;
  const StackBounds &bounds = thread_stack_bounds();
  uintptr_t pc;
  uintptr_t sp;
  uintptr_t bp;
  // Where this function is now: the rule for this very instruction describes its frame.
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(bp));
  if (!bounds.known || sp < bounds.low || sp >= bounds.high) return WalkResult::NeedsFullUnwinder;
  // Locals, not the bounds or `count_out`, so the loops keep them in registers: a store
  // through `frames` could otherwise alias them and force a reload every step.
  const uintptr_t high = bounds.high;
  WalkState walk{sp, bp, high - sizeof(uintptr_t), high - 2 * sizeof(uintptr_t)};
  size_t count = 0;
  uintptr_t rule_pc = pc;
  uintptr_t return_address = 0;
  // A start inside leaseguard (one of its own calls of a hook) is no application frame: then
  // the walk starts here and drops leaseguard's frames.
  if (start.pc != 0 && !excluded.contains(start.pc)) {
    // The caller's frame is above this one on the same stack, or the start is not trusted.
    if (start.sp <= sp || start.sp > high) return WalkResult::NeedsFullUnwinder;
    frames[count++] = start.pc;
    rule_pc = start.pc - 1;
    walk.sp = start.sp;
    walk.bp = start.bp;
  } else {
    // Our own frames (capture, tracker, hook) come first; the first foreign frame is the
    // application's call into the driver API.
    for (int steps = 0;; ++steps) {
      const Step step = steps < kMaxSteps ? step_frame<kTraced>(rule_pc, walk, return_address, trace) : Step::Outermost;
      if (step == Step::NeedsFullUnwinder) return WalkResult::NeedsFullUnwinder;
      if (step == Step::Outermost || return_address == 0) return WalkResult::Done;
      // A return address follows its call: the rule that applies is the call's, one byte back.
      rule_pc = return_address - 1;
      if (!excluded.contains(return_address)) break;
    }
    frames[count++] = return_address;
  }
  // The application's frames: every step adds one, so this loop ends at max_frames.
  while (count < max_frames) {
    const Step step = step_frame<kTraced>(rule_pc, walk, return_address, trace);
    if (step == Step::NeedsFullUnwinder) return WalkResult::NeedsFullUnwinder;
    if (step == Step::Outermost || return_address == 0) break;
    rule_pc = return_address - 1;
    frames[count++] = return_address;
  }
  count_out = count;
  return WalkResult::Done;
}

}  // namespace

__attribute__((noinline)) WalkResult capture_stack_cached(uintptr_t *frames, size_t max_frames,
                                                          const ExcludedCode &excluded, size_t &count_out,
                                                          const WalkStart &start) noexcept {
  return walk_cached<false>(frames, max_frames, excluded, count_out, start, nullptr);
}

void WalkTrace::fold() noexcept {
  // A step reads the higher word of a pair first (the return address above the saved
  // %rbp). A pair takes as many words of buffer_ as the two words it folds took while
  // walking, so pairs are written over the words already read; single words, which take
  // the same room, are kept aside until the pairs' end is known.
  uintptr_t aside[kSingleWords * kMaxWords];
  size_t pairs = 0, singles = 0;
  for (size_t word = 0; word < words_;) {
    const uintptr_t address = buffer_[2 * word], value = buffer_[2 * word + 1];
    if (word + 1 < words_ && buffer_[2 * (word + 1)] + sizeof(uintptr_t) == address) {
      uintptr_t *const pair = buffer_ + kPairWords * pairs;
      pair[0] = buffer_[2 * (word + 1) + 1];
      pair[1] = value;
      pair[2] = address - sizeof(uintptr_t);
      pair[3] = 0;
      ++pairs;
      word += 2;
    } else {
      aside[kSingleWords * singles] = address;
      aside[kSingleWords * singles + 1] = value;
      ++singles;
      word += 1;
    }
  }
  pairs_ = pairs;
  singles_ = singles;
  std::memcpy(buffer_ + kPairWords * pairs, aside, kSingleWords * singles * sizeof(uintptr_t));
}

void WalkTrace::remember_where_it_differs() const noexcept {
  for (size_t check = 0; check < pairs_ + singles_; ++check) {
    if (!holds(check)) {
      differed_ = check;
      return;
    }
  }
}

size_t capture_stack_traced(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded, const WalkStart &start,
                            WalkTrace &trace) noexcept {
  trace.clear();
  if (max_frames == 0) return 0;
  // Traced only from a known start inside the application, within the trace's room: a walk
  // that begins by skipping leaseguard's own frames could take more steps than it holds.
  if (start.pc == 0 || excluded.contains(start.pc) || max_frames > WalkTrace::kMaxFrames)
    return capture_stack(frames, max_frames, excluded, start);
  size_t count = 0;
  if (walk_cached<true>(frames, max_frames, excluded, count, start, &trace) == WalkResult::Done) {
    trace.start = start;
    trace.fold();
    trace.complete = true;
    return count;
  }
  return capture_stack_unwinder(frames, max_frames, excluded);
}

size_t capture_stack(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded,
                     const WalkStart &start) noexcept {
  if (max_frames == 0) return 0;
  size_t count = 0;
  if (capture_stack_cached(frames, max_frames, excluded, count, start) == WalkResult::Done) return count;
  // The full unwinder starts here and finds the application's frames by dropping ours.
  return capture_stack_unwinder(frames, max_frames, excluded);
}

size_t capture_stack_unwinder(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept {
  if (max_frames == 0) return 0;
  Walk walk{frames, max_frames, 0, excluded, true};
  _Unwind_Backtrace(visit, &walk);
  return walk.count;
}

}  // namespace leaseguard
