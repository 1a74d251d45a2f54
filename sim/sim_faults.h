// Fault injection for the simulated driver: make the Nth call of a named entry point fail.
//
// LEASEGUARD_SIM_FAULTS="cuMemAlloc_v2:3=2,cuMemFree_v2:1=1" makes the 3rd call of
// cuMemAlloc_v2 return 2 (CUDA_ERROR_OUT_OF_MEMORY) and the 1st call of cuMemFree_v2 return 1,
// without doing anything else. "*" as N fails every call. Counting is per entry point name.
#pragma once

#include <cstdint>
#include <optional>

namespace leaseguard::sim {

// The status to return instead of running entry point `name`, if a fault is due now. Every
// call is counted.
std::optional<int> injected_fault(const char *name) noexcept;

// Adds faults in the LEASEGUARD_SIM_FAULTS syntax (tests that start faulting midway).
void add_faults(const char *spec) noexcept;

// How many times entry point `name` was called in this process (tests: "freed exactly once").
uint64_t call_count(const char *name) noexcept;

}  // namespace leaseguard::sim
