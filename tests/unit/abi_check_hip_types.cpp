// Compile-time check: the HIP types in abi/lg_hip.h have the HIP headers' sizes, field
// offsets and enum values (abi_check_hip.c checks the prototypes over them).
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>

#include <cstddef>

namespace ours {
#define LG_HIP_NO_PROTOTYPES 1
#include "lg_hip.h"
}  // namespace ours

#define LG_SAME_SIZE(type) static_assert(sizeof(ours::type) == sizeof(::type), #type " differs from the HIP headers")
#define LG_SAME_OFFSET(type, field)                                     \
  static_assert(offsetof(ours::type, field) == offsetof(::type, field), \
                #type "::" #field " differs from the HIP headers")
#define LG_SAME_VALUE(name) static_assert(static_cast<long>(ours::name) == static_cast<long>(::name), #name)

LG_SAME_SIZE(hipChannelFormatDesc);
LG_SAME_SIZE(HIP_ARRAY_DESCRIPTOR);
LG_SAME_SIZE(HIP_ARRAY3D_DESCRIPTOR);
LG_SAME_OFFSET(HIP_ARRAY3D_DESCRIPTOR, Flags);
LG_SAME_SIZE(hipPitchedPtr);
LG_SAME_SIZE(hipExtent);
LG_SAME_SIZE(hipMemLocation);
LG_SAME_SIZE(hipMemAccessDesc);
LG_SAME_SIZE(hipMemPoolProps);
LG_SAME_OFFSET(hipMemPoolProps, location);
LG_SAME_SIZE(hipMemAllocationProp);
LG_SAME_OFFSET(hipMemAllocationProp, location);
LG_SAME_OFFSET(hipMemAllocationProp, requestedHandleType);
LG_SAME_SIZE(hipIpcMemHandle_t);
LG_SAME_VALUE(hipErrorInvalidValue);
LG_SAME_VALUE(hipErrorOutOfMemory);
LG_SAME_VALUE(hipErrorNotInitialized);
LG_SAME_VALUE(hipErrorNoDevice);
LG_SAME_VALUE(hipErrorInvalidDevice);
LG_SAME_VALUE(hipErrorInvalidContext);
LG_SAME_VALUE(hipErrorAlreadyMapped);
LG_SAME_VALUE(hipErrorNotMapped);
LG_SAME_VALUE(hipErrorInvalidHandle);
LG_SAME_VALUE(hipErrorNotFound);
LG_SAME_VALUE(hipErrorHostMemoryAlreadyRegistered);
LG_SAME_VALUE(hipErrorHostMemoryNotRegistered);
LG_SAME_VALUE(hipErrorNotSupported);
LG_SAME_VALUE(hipMemcpyDeviceToHost);
LG_SAME_VALUE(HIP_AD_FORMAT_FLOAT);
LG_SAME_VALUE(hipMemLocationTypeDevice);
LG_SAME_VALUE(hipMemAccessFlagsProtReadWrite);
LG_SAME_VALUE(hipMemHandleTypePosixFileDescriptor);
LG_SAME_VALUE(hipMemPoolAttrUsedMemCurrent);
LG_SAME_VALUE(hipMemAllocationTypePinned);
LG_SAME_VALUE(hipErrorInvalidImage);
LG_SAME_VALUE(hipErrorLaunchFailure);
// The launch markers are (void *) constants, not constant expressions: abi_check_hip.c
// compares them for AbiCheck.HipLaunchMarkersMatchTheHeaders.
