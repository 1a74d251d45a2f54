// Stack capture with the C++ runtime's unwinder.
#include "stack_capture.h"

#include <unwind.h>

namespace leaseguard {
namespace {

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

}  // namespace

size_t capture_stack(uintptr_t *frames, size_t max_frames, const ExcludedCode &excluded) noexcept {
  if (max_frames == 0) return 0;
  Walk walk{frames, max_frames, 0, excluded, true};
  _Unwind_Backtrace(visit, &walk);
  return walk.count;
}

}  // namespace leaseguard
