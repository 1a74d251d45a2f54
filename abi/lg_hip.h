/* The HIP runtime ABI as leaseguard needs it: types, constants and signatures of the
 * allocation family and of what the simulator's victims call.
 *
 * Like lg_cuda.h, leaseguard declares this itself so it builds without HIP headers; every
 * declaration is checked against the HIP headers at compile time where they are installed
 * (tests/unit/abi_check_hip.cpp). Numeric error codes are the CUDA driver's for every code
 * listed here. Usable from C and C++.
 *
 * LG_HIP_FUNCTIONS(X) lists the entry points returning hipError_t, as X(name, params, args).
 * Define LG_HIP_NO_PROTOTYPES to get the types and pointer typedefs without prototypes. */
#ifndef LEASEGUARD_ABI_LG_HIP_H
#define LEASEGUARD_ABI_LG_HIP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* With LG_HIP_EXTERNAL_TYPES the types come from the HIP headers, included before this one
 * (the ABI check redeclares the prototypes against them). */
#ifndef LG_HIP_EXTERNAL_TYPES
typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorDeinitialized = 4,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorInvalidContext = 201,
  hipErrorAlreadyMapped = 208,
  hipErrorNotMapped = 211,
  hipErrorOperatingSystem = 304,
  hipErrorInvalidHandle = 400,
  hipErrorNotFound = 500,
  hipErrorContextIsDestroyed = 709,
  hipErrorLaunchFailure = 719,
  hipErrorHostMemoryAlreadyRegistered = 712,
  hipErrorHostMemoryNotRegistered = 713,
  hipErrorNotSupported = 801,
  hipErrorUnknown = 999
} hipError_t;

typedef void *hipDeviceptr_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct hipArray *hipArray_t;
typedef struct ihipMemGenericAllocationHandle *hipMemGenericAllocationHandle_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;

typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4
} hipMemcpyKind;

typedef enum hipChannelFormatKind {
  hipChannelFormatKindSigned = 0,
  hipChannelFormatKindUnsigned = 1,
  hipChannelFormatKindFloat = 2,
  hipChannelFormatKindNone = 3
} hipChannelFormatKind;
typedef struct hipChannelFormatDesc {
  int x;
  int y;
  int z;
  int w;
  enum hipChannelFormatKind f;
} hipChannelFormatDesc;
typedef enum hipArray_Format { /* the values of CUarray_format */
                               HIP_AD_FORMAT_UNSIGNED_INT8 = 0x01,
                               HIP_AD_FORMAT_UNSIGNED_INT16 = 0x02,
                               HIP_AD_FORMAT_UNSIGNED_INT32 = 0x03,
                               HIP_AD_FORMAT_SIGNED_INT8 = 0x08,
                               HIP_AD_FORMAT_SIGNED_INT16 = 0x09,
                               HIP_AD_FORMAT_SIGNED_INT32 = 0x0a,
                               HIP_AD_FORMAT_HALF = 0x10,
                               HIP_AD_FORMAT_FLOAT = 0x20
} hipArray_Format;
typedef struct HIP_ARRAY_DESCRIPTOR {
  size_t Width;
  size_t Height;
  enum hipArray_Format Format;
  unsigned int NumChannels;
} HIP_ARRAY_DESCRIPTOR;
typedef struct HIP_ARRAY3D_DESCRIPTOR {
  size_t Width;
  size_t Height;
  size_t Depth;
  enum hipArray_Format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} HIP_ARRAY3D_DESCRIPTOR;
typedef struct hipPitchedPtr {
  void *ptr;
  size_t pitch;
  size_t xsize;
  size_t ysize;
} hipPitchedPtr;
typedef struct hipExtent {
  size_t width;
  size_t height;
  size_t depth;
} hipExtent;

typedef enum hipMemLocationType { hipMemLocationTypeInvalid = 0, hipMemLocationTypeDevice = 1 } hipMemLocationType;
typedef struct hipMemLocation {
  hipMemLocationType type;
  int id;
} hipMemLocation;
typedef enum hipMemAccessFlags {
  hipMemAccessFlagsProtNone = 0,
  hipMemAccessFlagsProtRead = 1,
  hipMemAccessFlagsProtReadWrite = 3
} hipMemAccessFlags;
typedef struct hipMemAccessDesc {
  hipMemLocation location;
  hipMemAccessFlags flags;
} hipMemAccessDesc;
typedef enum hipMemAllocationType {
  hipMemAllocationTypeInvalid = 0x0,
  hipMemAllocationTypePinned = 0x1,
  hipMemAllocationTypeMax = 0x7FFFFFFF
} hipMemAllocationType;
typedef enum hipMemAllocationHandleType {
  hipMemHandleTypeNone = 0x0,
  hipMemHandleTypePosixFileDescriptor = 0x1,
  hipMemHandleTypeWin32 = 0x2,
  hipMemHandleTypeWin32Kmt = 0x4
} hipMemAllocationHandleType;
typedef struct hipMemPoolProps {
  hipMemAllocationType allocType;
  hipMemAllocationHandleType handleTypes;
  hipMemLocation location;
  void *win32SecurityAttributes;
  unsigned char reserved[64];
} hipMemPoolProps;
typedef enum hipMemPoolAttr {
  hipMemPoolReuseFollowEventDependencies = 0x1,
  hipMemPoolReuseAllowOpportunistic = 0x2,
  hipMemPoolReuseAllowInternalDependencies = 0x3,
  hipMemPoolAttrReleaseThreshold = 0x4,
  hipMemPoolAttrReservedMemCurrent = 0x5,
  hipMemPoolAttrReservedMemHigh = 0x6,
  hipMemPoolAttrUsedMemCurrent = 0x7,
  hipMemPoolAttrUsedMemHigh = 0x8
} hipMemPoolAttr;
typedef struct hipMemAllocationProp {
  unsigned char compressionType;
  hipMemLocation location;
  hipMemAllocationHandleType requestedHandleType;
  hipMemAllocationType type;
  unsigned short usage;
  void *win32HandleMetaData;
} hipMemAllocationProp;
typedef enum hipMemAllocationGranularity_flags {
  hipMemAllocationGranularityMinimum = 0x0,
  hipMemAllocationGranularityRecommended = 0x1
} hipMemAllocationGranularity_flags;
typedef struct hipIpcMemHandle_st {
  char reserved[64];
} hipIpcMemHandle_t;
#endif /* LG_HIP_EXTERNAL_TYPES */

#define LG_HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define LG_HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define LG_HIP_LAUNCH_PARAM_END ((void *)0x03)

/* X(name, (parameters), (arguments)) for every entry point that returns hipError_t. */
/* clang-format off */
#define LG_HIP_FUNCTIONS(X)                                                                           \
  X(hipInit, (unsigned int flags), (flags))                                                           \
  X(hipGetDeviceCount, (int *count), (count))                                                         \
  X(hipSetDevice, (int deviceId), (deviceId))                                                         \
  X(hipGetDevice, (int *deviceId), (deviceId))                                                        \
  X(hipDeviceSynchronize, (void), ())                                                                 \
  X(hipDeviceReset, (void), ())                                                                       \
  X(hipMemGetInfo, (size_t * free, size_t *total), (free, total))                                    \
  X(hipMemGetAddressRange, (hipDeviceptr_t * pbase, size_t *psize, hipDeviceptr_t dptr), (pbase, psize, dptr)) \
  X(hipStreamSynchronize, (hipStream_t stream), (stream))                                             \
  X(hipMemcpy, (void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind), (dst, src, sizeBytes, kind)) \
  X(hipMemset, (void *dst, int value, size_t sizeBytes), (dst, value, sizeBytes))                    \
  X(hipMalloc, (void **ptr, size_t size), (ptr, size))                                                \
  X(hipExtMallocWithFlags, (void **ptr, size_t sizeBytes, unsigned int flags), (ptr, sizeBytes, flags)) \
  X(hipMallocManaged, (void **dev_ptr, size_t size, unsigned int flags), (dev_ptr, size, flags))       \
  X(hipMallocPitch, (void **ptr, size_t *pitch, size_t width, size_t height), (ptr, pitch, width, height)) \
  X(hipMemAllocPitch,                                                                                 \
    (hipDeviceptr_t * dptr, size_t *pitch, size_t widthInBytes, size_t height, unsigned int elementSizeBytes), \
    (dptr, pitch, widthInBytes, height, elementSizeBytes))                                            \
  X(hipMalloc3D, (hipPitchedPtr * pitchedDevPtr, hipExtent extent), (pitchedDevPtr, extent))          \
  X(hipMallocArray,                                                                                   \
    (hipArray_t * array, const hipChannelFormatDesc *desc, size_t width, size_t height, unsigned int flags), \
    (array, desc, width, height, flags))                                                              \
  X(hipMalloc3DArray,                                                                                 \
    (hipArray_t * array, const struct hipChannelFormatDesc *desc, struct hipExtent extent, unsigned int flags), \
    (array, desc, extent, flags))                                                                     \
  X(hipArrayCreate, (hipArray_t * pHandle, const HIP_ARRAY_DESCRIPTOR *pAllocateArray), (pHandle, pAllocateArray)) \
  X(hipArray3DCreate, (hipArray_t * array, const HIP_ARRAY3D_DESCRIPTOR *pAllocateArray), (array, pAllocateArray)) \
  X(hipHostMalloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))                 \
  X(hipHostAlloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))                  \
  X(hipMallocHost, (void **ptr, size_t size), (ptr, size))                                            \
  X(hipMemAllocHost, (void **ptr, size_t size), (ptr, size))                                          \
  X(hipMallocAsync, (void **dev_ptr, size_t size, hipStream_t stream), (dev_ptr, size, stream))       \
  X(hipMallocFromPoolAsync, (void **dev_ptr, size_t size, hipMemPool_t mem_pool, hipStream_t stream), \
    (dev_ptr, size, mem_pool, stream))                                                                \
  X(hipFreeAsync, (void *dev_ptr, hipStream_t stream), (dev_ptr, stream))                             \
  X(hipMemPoolCreate, (hipMemPool_t * mem_pool, const hipMemPoolProps *pool_props), (mem_pool, pool_props)) \
  X(hipMemPoolDestroy, (hipMemPool_t mem_pool), (mem_pool))                                           \
  X(hipMemPoolTrimTo, (hipMemPool_t mem_pool, size_t min_bytes_to_hold), (mem_pool, min_bytes_to_hold)) \
  X(hipMemPoolGetAttribute, (hipMemPool_t mem_pool, hipMemPoolAttr attr, void *value), (mem_pool, attr, value)) \
  X(hipDeviceGetDefaultMemPool, (hipMemPool_t * mem_pool, int device), (mem_pool, device))           \
  X(hipMemCreate,                                                                                     \
    (hipMemGenericAllocationHandle_t * handle, size_t size, const hipMemAllocationProp *prop, unsigned long long flags), \
    (handle, size, prop, flags))                                                                      \
  X(hipMemRelease, (hipMemGenericAllocationHandle_t handle), (handle))                                \
  X(hipMemAddressReserve, (void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags), \
    (ptr, size, alignment, addr, flags))                                                              \
  X(hipMemAddressFree, (void *devPtr, size_t size), (devPtr, size))                                   \
  X(hipMemMap,                                                                                        \
    (void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle, unsigned long long flags), \
    (ptr, size, offset, handle, flags))                                                               \
  X(hipMemUnmap, (void *ptr, size_t size), (ptr, size))                                               \
  X(hipMemSetAccess, (void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count), (ptr, size, desc, count)) \
  X(hipMemGetAllocationGranularity,                                                                   \
    (size_t * granularity, const hipMemAllocationProp *prop, hipMemAllocationGranularity_flags option), \
    (granularity, prop, option))                                                                      \
  X(hipMemRetainAllocationHandle, (hipMemGenericAllocationHandle_t * handle, void *addr), (handle, addr)) \
  X(hipMemExportToShareableHandle,                                                                    \
    (void *shareableHandle, hipMemGenericAllocationHandle_t handle, hipMemAllocationHandleType handleType, \
     unsigned long long flags),                                                                       \
    (shareableHandle, handle, handleType, flags))                                                     \
  X(hipMemImportFromShareableHandle,                                                                  \
    (hipMemGenericAllocationHandle_t * handle, void *osHandle, hipMemAllocationHandleType shHandleType), \
    (handle, osHandle, shHandleType))                                                                 \
  X(hipHostRegister, (void *hostPtr, size_t sizeBytes, unsigned int flags), (hostPtr, sizeBytes, flags)) \
  X(hipHostUnregister, (void *hostPtr), (hostPtr))                                                    \
  X(hipIpcGetMemHandle, (hipIpcMemHandle_t * handle, void *devPtr), (handle, devPtr))                 \
  X(hipIpcOpenMemHandle, (void **devPtr, hipIpcMemHandle_t handle, unsigned int flags), (devPtr, handle, flags)) \
  X(hipIpcCloseMemHandle, (void *devPtr), (devPtr))                                                   \
  X(hipModuleLoadData, (hipModule_t * module, const void *image), (module, image))                    \
  X(hipModuleUnload, (hipModule_t module), (module))                                                  \
  X(hipModuleGetFunction, (hipFunction_t * function, hipModule_t module, const char *kname), (function, module, kname)) \
  X(hipModuleLaunchKernel,                                                                            \
    (hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,             \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, \
     hipStream_t stream, void **kernelParams, void **extra),                                          \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, kernelParams, extra)) \
  X(hipFree, (void *ptr), (ptr))                                                                      \
  X(hipFreeArray, (hipArray_t array), (array))                                                        \
  X(hipArrayDestroy, (hipArray_t array), (array))                                                     \
  X(hipHostFree, (void *ptr), (ptr))                                                                  \
  X(hipFreeHost, (void *ptr), (ptr))

/* clang-format on */
#define LG_HIP_DECLARE_PFN(name, params, args) typedef hipError_t(*lg_pfn_##name) params;
LG_HIP_FUNCTIONS(LG_HIP_DECLARE_PFN)
#undef LG_HIP_DECLARE_PFN
typedef const char *(*lg_pfn_hipGetErrorName)(hipError_t hip_error);
typedef const char *(*lg_pfn_hipGetErrorString)(hipError_t hip_error);

#ifndef LG_HIP_NO_PROTOTYPES
#define LG_HIP_DECLARE_PROTOTYPE(name, params, args) hipError_t name params;
LG_HIP_FUNCTIONS(LG_HIP_DECLARE_PROTOTYPE)
#undef LG_HIP_DECLARE_PROTOTYPE
const char *hipGetErrorName(hipError_t hip_error);
const char *hipGetErrorString(hipError_t hip_error);
#endif

#ifdef __cplusplus
}
#endif

#endif /* LEASEGUARD_ABI_LG_HIP_H */
