// What every CUDA hook does around the driver call (see cuda_hooks.cpp for the rules):
// resolve the real function, open the re-entry scope, and tell the tracker what happened
// with errno preserved.
#pragma once

#include <cerrno>
#include <type_traits>

#include "driver_queries.h"
#include "hook_table.h"
#include "lg_cuda.h"
#include "preload_state.h"

#define LG_EXPORT extern "C" __attribute__((visibility("default")))

// Resolves the real function or returns CUDA_ERROR_NOT_INITIALIZED, as a driver that is not
// there would; then opens the re-entry scope.
#define LG_HOOK_PROLOGUE(name)                                       \
  auto real_fn = real<lg_pfn_##name>(Hook::name);                    \
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;         \
  ReentryGuard guard;                                                \
  Tracker *tracker = tracker_for(guard)

namespace leaseguard::interpose {

class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }

 private:
  int saved_;
};

inline constexpr int32_t kDeviceOfContext = -2;  // record_alloc: ask the current context

// Where the application's stack begins: the exported hook's caller, read from the hook's
// frame (stack_capture.h). Only in a function inlined into the hook itself (always_inline),
// where the builtin is the hook's frame.
#define LG_HOOK_CALLER() ::leaseguard::walk_start_above(__builtin_frame_address(0))

// Records a successful allocation. The device is the current context's unless the entry
// point names it (VMM and pools say where their memory lives; host-located memory is -1).
// Always inlined into the hook: it reads the hook's frame (LG_HOOK_CALLER).
__attribute__((always_inline)) inline void record_alloc(Tracker *tracker, Api api, Kind kind, uint64_t value,
                                                        uint64_t bytes, void *anchor,
                                                        int32_t device = kDeviceOfContext) {
  ErrnoKeeper keep;
  ContextInfo context = current_context(anchor);
  AllocationEvent event;
  event.api = api;
  event.kind = kind;
  event.address = value;
  event.bytes = bytes;
  event.device = device == kDeviceOfContext ? context.device : device;
  event.context = context.context;
  event.caller = LG_HOOK_CALLER();
  tracker->on_alloc(event);
}

// True if the free must not reach the driver: leaseguard already reclaimed the value when
// its lease ended, so the program's late free succeeds without a double free.
inline bool already_reclaimed(Tracker *tracker, Api api, uint64_t value) {
  ErrnoKeeper keep;
  return tracker->on_free(api, value) == FreeOutcome::Reclaimed;
}

// The 64-bit value the tracker keys a pointer, handle or address by.
template <typename Handle>
uint64_t value_of(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<uint64_t>(handle);
  else return static_cast<uint64_t>(handle);
}

}  // namespace leaseguard::interpose
