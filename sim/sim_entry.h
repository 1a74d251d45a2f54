// How the simulator's exported entry points (CUDA and HIP) begin: default visibility, and a
// failure a test injected for this entry point (sim_faults.h) returned before anything else.
#pragma once

#include "lg_cuda.h"
#include "sim_faults.h"

#define LG_SIM_EXPORT extern "C" __attribute__((visibility("default")))
#define LG_SIM_ENTRY(name)                                                                         \
  do {                                                                                             \
    static leaseguard::sim::EntryPoint lg_entry_point(#name);                                      \
    if (const int fault = lg_entry_point.called(); fault != leaseguard::sim::EntryPoint::kNoFault) \
      return static_cast<CUresult>(fault);                                                         \
  } while (0)
// The same for the HIP runtime's entry points (hipError_t shares the driver's numbers).
#define LG_SIM_HIP_ENTRY(name)                                                                     \
  do {                                                                                             \
    static leaseguard::sim::EntryPoint lg_entry_point(#name);                                      \
    if (const int fault = lg_entry_point.called(); fault != leaseguard::sim::EntryPoint::kNoFault) \
      return static_cast<hipError_t>(fault);                                                       \
  } while (0)
