// Compile-time check: every driver declaration in abi/lg_cuda.h has the same ABI as the
// toolkit's cuda.h (parameter count, and each parameter's size, signedness, pointer depth
// and constness). Built only where the CUDA Toolkit is installed; it has no run-time part.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ours {
#define LG_CUDA_NO_PROTOTYPES 1
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"
}  // namespace ours

namespace {

template <typename T, typename = void>
struct is_complete : std::false_type {};
template <typename T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <typename T>
constexpr bool is_record = std::is_class_v<T> || std::is_union_v<T>;  // a struct or a union

template <typename T>
constexpr bool is_scalar_like = std::is_integral_v<T> || std::is_enum_v<T>;

template <typename T>
constexpr bool is_signed_scalar() {
  if constexpr (std::is_enum_v<T>) return std::is_signed_v<std::underlying_type_t<T>>;
  else return std::is_signed_v<T>;
}

template <typename F, typename G>
struct SameSignature;

template <typename A, typename B>
constexpr bool abi_equal() {
  using RA = std::remove_cv_t<A>;
  using RB = std::remove_cv_t<B>;
  if constexpr (std::is_void_v<RA> || std::is_void_v<RB>) {
    return std::is_void_v<RA> && std::is_void_v<RB>;
  } else if constexpr (std::is_pointer_v<RA> || std::is_pointer_v<RB>) {
    if constexpr (std::is_pointer_v<RA> && std::is_pointer_v<RB>) {
      using PA = std::remove_pointer_t<RA>;
      using PB = std::remove_pointer_t<RB>;
      return std::is_const_v<PA> == std::is_const_v<PB> && abi_equal<PA, PB>();
    } else {
      return false;
    }
  } else if constexpr (is_scalar_like<RA> || is_scalar_like<RB>) {
    if constexpr (is_scalar_like<RA> && is_scalar_like<RB>)
      return sizeof(RA) == sizeof(RB) && is_signed_scalar<RA>() == is_signed_scalar<RB>();
    else return false;
  } else if constexpr (std::is_function_v<RA> || std::is_function_v<RB>) {
    // A callback parameter: the same ABI when its own parameters and result have it.
    if constexpr (std::is_function_v<RA> && std::is_function_v<RB>) return SameSignature<RA *, RB *>::value;
    else return false;
  } else if constexpr (is_record<RA> || is_record<RB>) {
    // Structs leaseguard only passes by pointer are declared incomplete on its side.
    if constexpr (is_record<RA> && is_record<RB>) {
      if constexpr (is_complete<RA>::value && is_complete<RB>::value) return sizeof(RA) == sizeof(RB);
      else return true;
    } else {
      return false;
    }
  } else {
    return std::is_same_v<RA, RB>;
  }
}

template <typename F, typename G>
struct SameSignature : std::false_type {};
template <typename R1, typename... A1, typename R2, typename... A2>
struct SameSignature<R1 (*)(A1...), R2 (*)(A2...)> {
  static constexpr bool value = sizeof...(A1) == sizeof...(A2) && abi_equal<R1, R2>() && (abi_equal<A1, A2>() && ...);
};

#define LG_CHECK_AGAINST_TOOLKIT(name, params, args)                          \
  static_assert(SameSignature<decltype(&::name), ours::lg_pfn_##name>::value, \
                #name " in abi/lg_cuda.h does not match the toolkit's cuda.h");
LG_CUDA_FUNCTIONS(LG_CHECK_AGAINST_TOOLKIT)

static_assert(sizeof(ours::CUdeviceptr) == sizeof(::CUdeviceptr));
static_assert(sizeof(ours::CUdeviceptr_v1) == sizeof(::CUdeviceptr_v1));
static_assert(static_cast<int>(ours::CUDA_ERROR_OUT_OF_MEMORY) == static_cast<int>(::CUDA_ERROR_OUT_OF_MEMORY));
static_assert(static_cast<int>(ours::CUDA_ERROR_INVALID_VALUE) == static_cast<int>(::CUDA_ERROR_INVALID_VALUE));
static_assert(static_cast<int>(ours::CUDA_ERROR_NOT_FOUND) == static_cast<int>(::CUDA_ERROR_NOT_FOUND));
static_assert(static_cast<int>(ours::CUDA_ERROR_INVALID_CONTEXT) == static_cast<int>(::CUDA_ERROR_INVALID_CONTEXT));
static_assert(static_cast<int>(ours::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
              static_cast<int>(::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
static_assert(static_cast<int>(ours::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) ==
              static_cast<int>(::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED));
static_assert(static_cast<int>(ours::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) ==
              static_cast<int>(::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT));

static_assert(static_cast<int>(ours::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) ==
              static_cast<int>(::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
static_assert(static_cast<int>(ours::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) ==
              static_cast<int>(::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED));
static_assert(static_cast<int>(ours::CUDA_ERROR_ILLEGAL_STATE) == static_cast<int>(::CUDA_ERROR_ILLEGAL_STATE));
static_assert(static_cast<int>(ours::CU_STREAM_CAPTURE_STATUS_NONE) ==
              static_cast<int>(::CU_STREAM_CAPTURE_STATUS_NONE));
static_assert(static_cast<int>(ours::CU_STREAM_CAPTURE_MODE_RELAXED) ==
              static_cast<int>(::CU_STREAM_CAPTURE_MODE_RELAXED));
static_assert(static_cast<int>(ours::CU_JIT_INPUT_FATBINARY) == static_cast<int>(::CU_JIT_INPUT_FATBINARY));
static_assert(static_cast<int>(ours::CU_STREAM_WAIT_VALUE_NOR) == static_cast<int>(::CU_STREAM_WAIT_VALUE_NOR));
static_assert(static_cast<int>(ours::CU_STREAM_WAIT_VALUE_FLUSH) == static_cast<int>(::CU_STREAM_WAIT_VALUE_FLUSH));
static_assert(static_cast<int>(ours::CU_STREAM_MEM_OP_WRITE_VALUE_64) ==
              static_cast<int>(::CU_STREAM_MEM_OP_WRITE_VALUE_64));
static_assert(static_cast<int>(ours::CU_STREAM_MEM_OP_BARRIER) == static_cast<int>(::CU_STREAM_MEM_OP_BARRIER));
static_assert(sizeof(ours::CUstreamBatchMemOpParams) == sizeof(::CUstreamBatchMemOpParams));
static_assert(offsetof(ours::CUstreamBatchMemOpParams, waitValue.address) ==
              offsetof(::CUstreamBatchMemOpParams, waitValue.address));
static_assert(offsetof(ours::CUstreamBatchMemOpParams, waitValue.value64) ==
              offsetof(::CUstreamBatchMemOpParams, waitValue.value64));
static_assert(offsetof(ours::CUstreamBatchMemOpParams, waitValue.flags) ==
              offsetof(::CUstreamBatchMemOpParams, waitValue.flags));
static_assert(offsetof(ours::CUstreamBatchMemOpParams, writeValue.value) ==
              offsetof(::CUstreamBatchMemOpParams, writeValue.value));
static_assert(offsetof(ours::CUlaunchConfig, hStream) == offsetof(::CUlaunchConfig, hStream));

// Structures the hooks read or the simulator fills: same size and the fields leaseguard reads
// at the same offsets.
static_assert(sizeof(ours::CUmemAllocationProp) == sizeof(::CUmemAllocationProp));
static_assert(offsetof(ours::CUmemAllocationProp, location) == offsetof(::CUmemAllocationProp, location));
static_assert(sizeof(ours::CUmemAccessDesc) == sizeof(::CUmemAccessDesc));
static_assert(sizeof(ours::CUmemPoolProps) == sizeof(::CUmemPoolProps));
static_assert(sizeof(ours::CUDA_ARRAY_DESCRIPTOR) == sizeof(::CUDA_ARRAY_DESCRIPTOR));
static_assert(sizeof(ours::CUDA_ARRAY_DESCRIPTOR_v1) == sizeof(::CUDA_ARRAY_DESCRIPTOR_v1));
static_assert(sizeof(ours::CUDA_ARRAY3D_DESCRIPTOR) == sizeof(::CUDA_ARRAY3D_DESCRIPTOR));
static_assert(sizeof(ours::CUDA_ARRAY3D_DESCRIPTOR_v1) == sizeof(::CUDA_ARRAY3D_DESCRIPTOR_v1));
static_assert(offsetof(ours::CUDA_ARRAY3D_DESCRIPTOR, Flags) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Flags));
static_assert(sizeof(ours::CUipcMemHandle) == sizeof(::CUipcMemHandle));
static_assert(sizeof(ours::CUDA_EXTERNAL_MEMORY_HANDLE_DESC) == sizeof(::CUDA_EXTERNAL_MEMORY_HANDLE_DESC));
static_assert(offsetof(ours::CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size) ==
              offsetof(::CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size));
static_assert(sizeof(ours::CUDA_EXTERNAL_MEMORY_BUFFER_DESC) == sizeof(::CUDA_EXTERNAL_MEMORY_BUFFER_DESC));
static_assert(static_cast<int>(ours::CU_MEM_LOCATION_TYPE_HOST) == static_cast<int>(::CU_MEM_LOCATION_TYPE_HOST));
static_assert(static_cast<int>(ours::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
              static_cast<int>(::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
static_assert(static_cast<int>(ours::CU_AD_FORMAT_FLOAT) == static_cast<int>(::CU_AD_FORMAT_FLOAT));
static_assert(static_cast<int>(ours::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) ==
              static_cast<int>(::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD));
static_assert(static_cast<int>(ours::CUDA_ERROR_INVALID_IMAGE) == static_cast<int>(::CUDA_ERROR_INVALID_IMAGE));
static_assert(static_cast<int>(ours::CUDA_ERROR_LAUNCH_FAILED) == static_cast<int>(::CUDA_ERROR_LAUNCH_FAILED));
static_assert(static_cast<int>(ours::CU_MEMPOOL_ATTR_USED_MEM_CURRENT) ==
              static_cast<int>(::CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
static_assert(static_cast<int>(ours::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) ==
              static_cast<int>(::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED));
static_assert(static_cast<int>(ours::CUDA_ERROR_NOT_MAPPED) == static_cast<int>(::CUDA_ERROR_NOT_MAPPED));
}  // namespace
