// The stack each thread captured last, with what its walk read, so that capturing the same
// stack again (a loop allocating from one place, the common case) costs a check of those
// words instead of a walk and a lookup of the interned stack.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_capture.h"

namespace leaseguard {

struct LastStack {
  uint64_t tracker = 0;     // the serial of the tracker that interned it
  uint64_t generation = 0;  // the code generation (code_generation.h) when it was walked
  size_t max_frames = 0;    // the depth it was captured at
  uint32_t stack_id = 0;    // 0: none
  WalkTrace trace;
};

// This thread's LastStack for the duration of a capture, made on the thread's first. get()
// is nullptr if memory ran out, or if the thread is already inside a capture: a signal
// handler that allocates while its thread captures a stack walks without it, and leaves it
// alone.
class ThisThreadsLastStack {
 public:
  ThisThreadsLastStack() noexcept;
  ~ThisThreadsLastStack();
  ThisThreadsLastStack(const ThisThreadsLastStack &) = delete;
  ThisThreadsLastStack &operator=(const ThisThreadsLastStack &) = delete;
  LastStack *get() const noexcept { return stack_; }

 private:
  LastStack *stack_ = nullptr;
  bool claimed_ = false;
};

}  // namespace leaseguard
