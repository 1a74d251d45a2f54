// Helpers for the C++ API tests: the simulator's call counters and fault injection, and a
// module image of the simulator's host kernels.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "leaseguard/session.hpp"

namespace leaseguard::testing {

// The simulated library's own symbol (each simulated library counts its own calls).
inline void *sim_symbol(const char *library, const char *name) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(library, RTLD_NOW);
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

inline uint64_t sim_calls(const char *entry_point, const char *library = "libcuda.so.1") {
  auto count = reinterpret_cast<uint64_t (*)(const char *)>(sim_symbol(library, "leaseguard_sim_call_count"));
  return count != nullptr ? count(entry_point) : UINT64_MAX;
}

// Adds faults from now on; a fault's N counts the calls made after it was added.
inline void sim_fail(const std::string &spec, const char *library = "libcuda.so.1") {
  auto add = reinterpret_cast<void (*)(const char *)>(sim_symbol(library, "leaseguard_sim_add_faults"));
  if (add != nullptr) add(spec.c_str());
}

inline std::span<const std::byte> sim_module() {
  static const char image[] = "leaseguard-sim-module:vector_add,fill_u32,mixed_args";
  return std::as_bytes(std::span(image, sizeof image));
}

// A session with a short TTL holding one allocation of `bytes`. On a loaded machine a short
// TTL can end before the first allocation is made; then the session is made again with twice
// the TTL, until the allocation comes first (what the tests need is the order, not the time).
inline GpuMemHandle allocate_before_expiry(std::optional<GpuSession> &session, SessionOptions options, size_t bytes) {
  for (;; options.ttl *= 2) {
    session.emplace(options);
    try {
      return session->mem_alloc(bytes);
    } catch (const Error &error) {
      if (error.kind() != ErrorKind::LeaseExpired || options.ttl > std::chrono::minutes(1)) throw;
    }
  }
}

// Waits for the session's lease to end (its TTL's teardown runs on another thread).
inline bool wait_for_expiry(const GpuSession &session) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!session.expired() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return session.expired();
}

}  // namespace leaseguard::testing
