// Where each hooked entry point's real function is (the table's entry points: core/
// entry_points.h).
//
// A real function is remembered from whichever path first resolves it: RTLD_NEXT for programs
// linked with -lcuda, dlsym on a handle, or the driver's proc-address lookup; so a hook calls exactly the
// variant the program would have called.
#pragma once

#include <atomic>
#include <cstddef>

#include "entry_point_abi.h"

namespace leaseguard::interpose {

// The entry point named exactly `name`, or Api::Unknown. Allocation-free and lock-free: it
// runs on the dlsym path.
Api find_hook(const char *name) noexcept;

// leaseguard's own definition of `api` (its hook).
void *wrapper_of(Api api) noexcept;

// True if `function` is one of leaseguard's hooks.
bool is_wrapper(const void *function) noexcept;

namespace detail {
// Each entry point's real function once known (remember_real); null until then.
extern std::atomic<void *> g_real[static_cast<size_t>(Api::Count)];
void *look_up_real_function(Api api) noexcept;
}  // namespace detail

// The driver's real function for `api`: remembered if known, else looked up with RTLD_NEXT
// (the next definition after the preload). May be null if no driver is loaded. Inline:
// every hooked call asks, and after the first it is one load.
inline void *real_function(Api api) noexcept {
  void *function = detail::g_real[static_cast<size_t>(api)].load(std::memory_order_acquire);
  return function != nullptr ? function : detail::look_up_real_function(api);
}

// The same, typed as the ABI declares entry point A.
template <Api A>
typename Abi<A>::Function real() noexcept {
  return reinterpret_cast<typename Abi<A>::Function>(real_function(A));
}

// What the hook for `api` forwards to, without the warning real_function gives when nothing
// is found: remembered if known, else the next definition after the preload, else null (a
// driver reached through handles only). Where a shim sits between leaseguard and the driver,
// the shim's function.
void *forwarded_function(Api api) noexcept;

// Records `function` as the driver's implementation of `api` unless one is known already.
void remember_real(Api api, void *function) noexcept;

}  // namespace leaseguard::interpose
