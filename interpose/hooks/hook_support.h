// What every hook does around the driver's call, as small templates over the table's entry
// points (core/base/entry_points.h); each hook (cuda_hooks.cpp, cuda_resource_hooks.cpp,
// hip_hooks.cpp) is a plain function that passes its arguments to the one for its shape.
//
// The rules, for every shape:
//   - the real function is called with the caller's arguments and its status returned
//     unchanged; with no driver, the vendor's "not initialized", as a missing driver would;
//   - an allocation is recorded after the driver succeeded, reading out-parameters only
//     then and only if non-NULL (a NULL one is never read);
//   - a free is recorded before the driver call, so no other thread can be handed the same
//     value and record it while the old record still exists. An unknown value, NULL, or a
//     double free is forwarded untouched: the driver decides, as without leaseguard. The one
//     free not forwarded is the late free of memory leaseguard reclaimed when its lease
//     ended (policy reclaim): it succeeds without reaching the driver;
//   - errno is preserved across leaseguard's own work;
//   - a hook called from inside another (a driver calling its own exports, or another
//     interposer between leaseguard and the driver) forwards without recording.
#pragma once

#include <cerrno>
#include <cstdint>
#include <type_traits>

#include "driver_queries.h"
#include "hip_queries.h"
#include "hook_table.h"
#include "preload_state.h"

#define LG_EXPORT extern "C" __attribute__((visibility("default")))
#define LG_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace leaseguard::interpose {

class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }

 private:
  int saved_;
};

inline constexpr int32_t kDeviceOfContext = -2;  // Made: the current context's (HIP: device's)

// What an allocating call handed out, read from its arguments after it succeeded.
struct Made {
  uint64_t value = 0;  // the address or handle
  uint64_t bytes = 0;
  int32_t device = kDeviceOfContext;  // unless the call says where its memory lives (-1: host)
  bool handed_out = false;            // false: nothing to record (a NULL out-parameter or result)
};

inline Made made(uint64_t value, uint64_t bytes, int32_t device = kDeviceOfContext) {
  return Made{value, bytes, device, true};
}

// The 64-bit value the tracker keys a pointer, handle or address by.
template <typename Handle>
uint64_t value_of(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<uint64_t>(handle);
  else return static_cast<uint64_t>(handle);
}

template <Api A>
using Statuses = VendorAbi<Abi<A>::kVendor>;

// Where the application's stack begins: the exported hook's caller, read from the hook's
// frame (stack_capture.h). Only in a function inlined into the hook itself (always_inline),
// where the builtin is the hook's frame.
#define LG_HOOK_CALLER() ::leaseguard::walk_start_above(__builtin_frame_address(0))

// Records what an allocation of A made, with its device and context: the current
// context's (CUDA) or the current device's (HIP, whose records carry a token per device),
// unless the call named where its memory lives. Inlined into the hook: it reads its frame.
template <Api A>
LG_ALWAYS_INLINE void record_allocation(Tracker *tracker, const Made &made, void *anchor) {
  ErrnoKeeper keep;
  AllocationEvent event;
  event.api = A;
  event.kind = entry_point(A)->kind;
  event.address = made.value;
  event.bytes = made.bytes;
  if constexpr (Abi<A>::kVendor == Vendor::Cuda) {
    const ContextInfo context = current_context(anchor);
    event.device = made.device == kDeviceOfContext ? context.device : made.device;
    event.context = context.context;
    if (!tracker->device_noted(event.device)) note_device_uuid(*tracker, event.device, anchor);
  } else {
    event.device = made.device == kDeviceOfContext ? hip_current_device(anchor) : made.device;
    event.context = hip_device_token(event.device);
  }
  event.caller = LG_HOOK_CALLER();
  tracker->on_alloc(event);
}

// An allocating entry point: forwards, then records what `read_made` (reading the call's
// arguments) says the driver handed out.
template <Api A, typename ReadMade, typename... Args>
LG_ALWAYS_INLINE StatusOf<A> allocating_call(ReadMade read_made, Args... args) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return Statuses<A>::kNotInitialized;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  const StatusOf<A> status = real_fn(args...);
  if (tracker != nullptr && status == Statuses<A>::kSuccess) {
    const Made allocation = read_made();
    if (allocation.handed_out) record_allocation<A>(tracker, allocation, reinterpret_cast<void *>(real_fn));
  }
  return status;
}

// The common shape: the value is written to the first argument, the size is the second.
// HIP hands out NULL for a size of 0, which is no allocation.
template <Api A, typename Out, typename Bytes, typename... Rest>
LG_ALWAYS_INLINE StatusOf<A> allocation(Out *out, Bytes bytes, Rest... rest) {
  return allocating_call<A>(
      [&] {
        const bool none = out == nullptr || (Abi<A>::kVendor == Vendor::Hip && value_of(*out) == 0);
        return none ? Made{} : made(value_of(*out), static_cast<uint64_t>(bytes));
      },
      out, bytes, rest...);
}

// Tells the tracker a value is being freed (before the driver is asked); true if the free
// must not reach the driver: leaseguard already reclaimed the value when its lease ended,
// so the program's late free succeeds without a double free.
inline bool free_was_reclaimed(Tracker *tracker, Api api, uint64_t value) {
  ErrnoKeeper keep;
  return tracker->on_free(api, value) == FreeOutcome::Reclaimed;
}

// A releasing entry point: the value it releases is its first argument.
template <Api A, typename Value, typename... Rest>
LG_ALWAYS_INLINE StatusOf<A> release(Value value, Rest... rest) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return Statuses<A>::kNotInitialized;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  if (tracker != nullptr && value_of(value) != 0 && free_was_reclaimed(tracker, A, value_of(value)))
    return Statuses<A>::kSuccess;
  return real_fn(value, rest...);
}

// A call the tracker only hears about after it succeeded (VMM mappings): `then` runs with
// the tracker.
template <Api A, typename Then, typename... Args>
LG_ALWAYS_INLINE StatusOf<A> call_then(Then then, Args... args) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return Statuses<A>::kNotInitialized;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  const StatusOf<A> status = real_fn(args...);
  if (tracker != nullptr && status == Statuses<A>::kSuccess) then();
  return status;
}

// Releasing a pool: the driver destroys a pool with allocations outstanding at once for the
// program and releases it when they are freed; the report says it happened. `outstanding`
// asks the driver how many bytes are still allocated from it.
template <Api A, typename Pool, typename Outstanding>
LG_ALWAYS_INLINE StatusOf<A> pool_release(Pool pool, Outstanding outstanding) {
  const auto real_fn = real<A>();
  if (real_fn == nullptr) return Statuses<A>::kNotInitialized;
  ReentryGuard guard;
  Tracker *tracker = tracker_for(guard);
  if (tracker == nullptr || pool == nullptr) return real_fn(pool);
  if (free_was_reclaimed(tracker, A, value_of(pool))) return Statuses<A>::kSuccess;
  uint64_t in_use = 0;
  {
    ErrnoKeeper keep;
    in_use = outstanding(reinterpret_cast<void *>(real_fn), pool);
  }
  const StatusOf<A> status = real_fn(pool);
  if (status == Statuses<A>::kSuccess && in_use != 0) {
    ErrnoKeeper keep;
    tracker->on_pool_destroyed_in_use(value_of(pool), in_use);
  }
  return status;
}

// The end of a context (or of everything on a HIP device): marked before the driver is asked,
// recorded after it succeeded, if `ending` (asked of the driver, with the tracker) says which
// context ended: what was recorded before the mark went with it.
struct ContextEnding {
  uint64_t context = 0;
  int32_t device = -1;
  bool ends = false;  // false: nothing ends (no such context, or the call is not the last reference)
};

}  // namespace leaseguard::interpose
