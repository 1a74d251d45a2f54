// The table's entry points (core/base/entry_points.h) as the preload calls and defines them: each
// one's function type from its ABI declaration (abi/lg_cuda.h, abi/lg_hip.h), and what its
// vendor's statuses are.
#pragma once

#include "entry_points.h"
#include "lg_cuda.h"
#include "lg_hip.h"

namespace leaseguard::interpose {

template <Vendor V>
struct VendorAbi;
template <>
struct VendorAbi<Vendor::Cuda> {
  using Status = CUresult;
  static constexpr Status kSuccess = CUDA_SUCCESS;
  static constexpr Status kNotInitialized = CUDA_ERROR_NOT_INITIALIZED;  // no driver: as one that is not there
  static constexpr Status kNotFound = CUDA_ERROR_NOT_FOUND;
};
template <>
struct VendorAbi<Vendor::Hip> {
  using Status = hipError_t;
  static constexpr Status kSuccess = hipSuccess;
  static constexpr Status kNotInitialized = hipErrorNotInitialized;
  static constexpr Status kNotFound = hipErrorNotFound;
};

// Abi<A>::Function: the type of entry point A (from its declaration); Abi<A>::Vendor.
template <Api A>
struct Abi;
#define LG_ABI_OF(name, id, vendor, ...)              \
  template <>                                         \
  struct Abi<Api::name> {                             \
    using Function = decltype(&::name);               \
    static constexpr Vendor kVendor = Vendor::vendor; \
  };
LG_ENTRY_POINTS(LG_ABI_OF)
#undef LG_ABI_OF

template <Api A>
using StatusOf = typename VendorAbi<Abi<A>::kVendor>::Status;

}  // namespace leaseguard::interpose
