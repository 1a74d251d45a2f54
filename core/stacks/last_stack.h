// The stacks each thread captured last, with what their walks read, so that capturing one
// of them again (a loop allocating from one place, or from a few in turn: the common case)
// costs a check of those words instead of a walk and a lookup of the interned stack.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_capture.h"

namespace leaseguard {

struct LastStack {
  uint64_t tracker_number = 0;   // the tracker that interned it (Tracker::instance_number_)
  uint64_t code_generation = 0;  // code_generation() when it was walked
  size_t max_frames = 0;         // the depth it was captured at
  uint32_t stack_id = 0;         // 0: none
  WalkTrace trace;

  // True if a walk from `start`, for this tracker, depth and code generation, would
  // produce this stack again.
  bool walks_again(uint64_t tracker, size_t frames, uint64_t code_now, const WalkStart &start) const noexcept {
    return stack_id != 0 && tracker_number == tracker && max_frames == frames && code_generation == code_now &&
           trace.still_holds(start);
  }
};

// The last few stacks of one thread. A loop that allocates from a handful of places in turn
// finds each of them here; past that, the oldest is walked over again.
struct LastStacks {
  static constexpr size_t kKept = 4;
  LastStack kept[kKept];
  size_t newest = 0;  // the one found or walked last: checked first

  // The kept stack a walk from `start` would produce again, or nullptr.
  const LastStack *find(uint64_t tracker, size_t frames, uint64_t code_now, const WalkStart &start) noexcept {
    for (size_t i = 0; i < kKept; ++i) {
      const size_t at = (newest + i) % kKept;
      if (kept[at].walks_again(tracker, frames, code_now, start)) {
        newest = at;
        return &kept[at];
      }
    }
    return nullptr;
  }
  // Where the next walk is kept: the entry after the one found or walked last, in turn. A
  // loop through up to kKept places fills one entry each, then finds every one of them.
  LastStack &make_room() noexcept {
    newest = (newest + 1) % kKept;
    kept[newest].stack_id = 0;
    return kept[newest];
  }
};

namespace detail {
// Initial-exec, as the core's other thread-local state (tracker.cpp says why): a pointer
// and a flag, the records themselves on the heap (each holds two kilobytes of trace).
extern __thread LastStacks *t_last_stacks __attribute__((tls_model("initial-exec")));
extern __thread bool t_in_capture __attribute__((tls_model("initial-exec")));
// Makes the calling thread's LastStacks on its first capture: nullptr if it cannot.
LastStacks *make_this_threads_last_stacks() noexcept;
}  // namespace detail

// This thread's LastStacks for the duration of a capture, made on the thread's first. get()
// is nullptr if memory ran out, or if the thread is already inside a capture: a signal
// handler that allocates while its thread captures a stack walks without it, and leaves it
// alone. Inline: it is on every allocation's path.
class ThisThreadsLastStack {
 public:
  ThisThreadsLastStack() noexcept {
    if (detail::t_in_capture) return;
    detail::t_in_capture = true;
    claimed_ = true;
    // The flag is set before the record is touched, as a signal handler on this thread sees it.
    __asm__ volatile("" ::: "memory");
    stacks_ = detail::t_last_stacks != nullptr ? detail::t_last_stacks : detail::make_this_threads_last_stacks();
  }
  ~ThisThreadsLastStack() {
    if (!claimed_) return;
    __asm__ volatile("" ::: "memory");
    detail::t_in_capture = false;
  }
  ThisThreadsLastStack(const ThisThreadsLastStack &) = delete;
  ThisThreadsLastStack &operator=(const ThisThreadsLastStack &) = delete;
  LastStacks *get() const noexcept { return stacks_; }

 private:
  LastStacks *stacks_ = nullptr;
  bool claimed_ = false;
};

}  // namespace leaseguard
