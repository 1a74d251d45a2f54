// Helpers for the C++ API tests: the simulator's call counters and fault injection, and a
// module image of the simulator's host kernels.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

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

}  // namespace leaseguard::testing
