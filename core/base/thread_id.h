// The kernel's id of the calling thread (gettid), cached per thread: journal records carry it.
#pragma once

#include <cstdint>

namespace leaseguard {

namespace detail {
// Initial-exec, as every thread-local the core reads on an allocation's path (tracker.cpp
// says why).
extern thread_local uint32_t t_thread_id __attribute__((tls_model("initial-exec")));
uint32_t look_up_thread_id() noexcept;
}  // namespace detail

inline uint32_t this_thread_id() noexcept {
  const uint32_t id = detail::t_thread_id;
  return id != 0 ? id : detail::look_up_thread_id();
}

// In a new process (a fork child): the cached id is its parent thread's.
inline void forget_thread_id() noexcept { detail::t_thread_id = 0; }

}  // namespace leaseguard
