// Fault injection for the simulated driver: make the Nth call of a named entry point fail.
//
// LEASEGUARD_SIM_FAULTS="cuMemAlloc_v2:3=2,cuMemFree_v2:1=1" makes the 3rd call of
// cuMemAlloc_v2 return 2 (CUDA_ERROR_OUT_OF_MEMORY) and the 1st call of cuMemFree_v2 return 1,
// without doing anything else. "*" as N fails every call. Counting is per entry point name.
#pragma once

#include <optional>

namespace leaseguard::sim {

// The status to return instead of running entry point `name`, if a fault is due now.
std::optional<int> injected_fault(const char *name) noexcept;

}  // namespace leaseguard::sim
