// Stack capture: a walk driven by cached call frame information, with the C++ runtime's
// unwinder behind it for anything the cache cannot step.
#include "stack_capture.h"

#include <pthread.h>
#include <unwind.h>

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
    if (walk->excluded.contains(ip))
      return _URC_NO_REASON;
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
thread_local StackBounds t_bounds __attribute__((tls_model("initial-exec")));  // see event_clock.cpp

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

// Enough for any real stack; a cycle in corrupt frames ends here.
constexpr int kMaxSteps = 512;

}  // namespace

__attribute__((noinline)) WalkResult capture_stack_cached(uintptr_t *frames, size_t max_frames,
                                                          const ExcludedCode &excluded, size_t &count_out,
                                                          const WalkStart &start) noexcept {
  count_out = 0;
  if (max_frames == 0) return WalkResult::Done;
  const StackBounds &bounds = thread_stack_bounds();
  uintptr_t pc;
  uintptr_t sp;
  uintptr_t bp;
  // Where this function is now: the rule for this very instruction describes its frame.
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(bp));
  if (!bounds.known || sp < bounds.low || sp >= bounds.high) return WalkResult::NeedsFullUnwinder;
  // Locals, not the bounds or `count_out`, so the loop keeps them in registers: a store
  // through `frames` could otherwise alias them and force a reload every step.
  const uintptr_t high = bounds.high;
  // The highest address a saved word, or a pair of them, can start at within the stack.
  const uintptr_t last_word = high - sizeof(uintptr_t);
  const uintptr_t last_pair = high - 2 * sizeof(uintptr_t);
  size_t count = 0;
  uintptr_t rule_pc = pc;
  // A start inside leaseguard (one of its own calls of a hook) is no application frame: then
  // the walk starts here and drops leaseguard's frames.
  if (start.pc != 0 && !excluded.contains(start.pc)) {
    // The caller's frame is above this one on the same stack, or the start is not trusted.
    if (start.sp <= sp || start.sp > high) return WalkResult::NeedsFullUnwinder;
    frames[count++] = start.pc;
    if (count == max_frames) {
      count_out = count;
      return WalkResult::Done;
    }
    rule_pc = start.pc - 1;
    sp = start.sp;
    bp = start.bp;
  }
  for (int steps = 0; steps < kMaxSteps; ++steps) {
    const PackedFrameRule rule = cached_frame_rule_at(rule_pc);
    uintptr_t return_address;
    if (rule.is_frame_pointer_frame()) {
      // The caller's %rbp and the return address are the two words at %rbp, which must lie
      // between this frame's stack pointer and the stack's top.
      if (bp < sp || bp > last_pair) return WalkResult::NeedsFullUnwinder;
      const auto *saved = reinterpret_cast<const uintptr_t *>(bp);
      return_address = saved[1];
      sp = bp + 2 * sizeof(uintptr_t);
      bp = saved[0];
    } else {
      const FrameRule::Cfa cfa_rule = rule.cfa();
      if (cfa_rule != FrameRule::Cfa::StackPointer && cfa_rule != FrameRule::Cfa::FramePointer) {
        if (cfa_rule == FrameRule::Cfa::Outermost) break;
        return WalkResult::NeedsFullUnwinder;
      }
      const uintptr_t cfa = (cfa_rule == FrameRule::Cfa::StackPointer ? sp : bp) + static_cast<intptr_t>(rule.cfa_offset());
      // The return address, at cfa - 8, must lie between this frame's stack pointer and the
      // stack's top.
      if (cfa - sizeof(uintptr_t) < sp || cfa - sizeof(uintptr_t) > last_word) return WalkResult::NeedsFullUnwinder;
      return_address = *reinterpret_cast<const uintptr_t *>(cfa - sizeof(uintptr_t));
      if (rule.rbp_saved()) {
        const uintptr_t saved_at = cfa + static_cast<intptr_t>(rule.rbp_offset());
        if (saved_at < sp || saved_at > last_word) return WalkResult::NeedsFullUnwinder;
        bp = *reinterpret_cast<const uintptr_t *>(saved_at);
      }
      sp = cfa;
    }
    if (return_address == 0) break;
    // A return address follows its call: the rule that applies is the call's, one byte back.
    rule_pc = return_address - 1;
    // Our own frames (capture, tracker, hook) come first; the first foreign frame is the
    // application's call into the driver API.
    if (count == 0 && excluded.contains(return_address)) continue;
    frames[count++] = return_address;
    if (count == max_frames) break;
  }
  count_out = count;
  return WalkResult::Done;
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
