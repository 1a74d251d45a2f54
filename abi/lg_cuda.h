/* The CUDA driver ABI as leaseguard needs it: types, constants and signatures.
 *
 * leaseguard builds without the CUDA Toolkit, so it declares what it uses itself. Every
 * declaration here is checked against the toolkit's cuda.h at compile time when the toolkit
 * is present (tests/unit/abi_check_test.cpp). Usable from C and C++.
 *
 * LG_CUDA_FUNCTIONS(X) lists every driver entry point leaseguard's simulator implements or
 * its preload hooks; X(name, params, args) receives the parameter list and the argument list.
 * Define LG_CUDA_NO_PROTOTYPES to get the types and pointer typedefs without prototypes. */
#ifndef LEASEGUARD_ABI_LG_CUDA_H
#define LEASEGUARD_ABI_LG_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_ALREADY_MAPPED = 208,
  CUDA_ERROR_NOT_MAPPED = 211,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef uint64_t cuuint64_t;

typedef struct CUctx_st *CUcontext;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;

typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT = 14,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115
} CUdevice_attribute;

typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

enum {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2
};

typedef enum CUmemAttach_flags_enum { CU_MEM_ATTACH_GLOBAL = 1, CU_MEM_ATTACH_HOST = 2 } CUmemAttach_flags;
#ifndef CU_MEMHOSTALLOC_PORTABLE
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#endif

/* Virtual memory management. */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef enum CUmemAllocationHandleType_enum {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
  CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
  CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
  CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
  CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;
typedef enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
  CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;
typedef enum CUmemAllocationType_enum {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
  CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;
typedef enum CUmemAllocationGranularity_flags_enum {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;
typedef enum CUmemAccess_flags_enum {
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
  CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;
typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc_st {
  CUmemLocation location;
  CUmemAccess_flags flags;
} CUmemAccessDesc;

/* Memory pools. */
typedef struct CUmemPoolProps_st {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

typedef enum CUmemPool_attribute_enum {
  CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH
} CUmemPool_attribute;

/* Arrays. */
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef enum CUarray_format_enum {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20
} CUarray_format;
typedef struct CUDA_ARRAY_DESCRIPTOR_v1_st {
  unsigned int Width;
  unsigned int Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v1;
typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_v1_st {
  unsigned int Width;
  unsigned int Height;
  unsigned int Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR_v1;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

/* IPC, host registration, external memory. */
#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;
enum { CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1 };
typedef struct CUextMemory_st *CUexternalMemory;
typedef enum CUexternalMemoryHandleType_enum {
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32 = 2,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_KMT = 3,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP = 4,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE = 5,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE = 6,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE_KMT = 7,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF = 8,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD = 9
} CUexternalMemoryHandleType;
typedef struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st {
  CUexternalMemoryHandleType type;
  union {
    int fd;
    struct {
      void *handle;
      const void *name;
    } win32;
    const void *nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_HANDLE_DESC;
typedef struct CUDA_EXTERNAL_MEMORY_BUFFER_DESC_st {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_BUFFER_DESC;

/* Context settings and device identity (what the CUDA runtime reads at start-up). */
typedef enum CUlimit_enum {
  CU_LIMIT_STACK_SIZE = 0x00,
  CU_LIMIT_PRINTF_FIFO_SIZE = 0x01,
  CU_LIMIT_MALLOC_HEAP_SIZE = 0x02,
  CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH = 0x03,
  CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 0x04,
  CU_LIMIT_MAX_L2_FETCH_GRANULARITY = 0x05,
  CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06,
  CU_LIMIT_SHMEM_SIZE = 0x07,
  CU_LIMIT_CIG_ENABLED = 0x08,
  CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED = 0x09
} CUlimit;
typedef struct CUevent_st *CUevent;
typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef enum CUjit_option_enum { CU_JIT_MAX_REGISTERS = 0 } CUjit_option;
typedef enum CUlibraryOption_enum { CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0 } CUlibraryOption;
typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
} CUfunction_attribute;
typedef struct CUlaunchAttribute_st {
  int id; /* CUlaunchAttributeID */
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned int x, y, z;
    } clusterDim; /* id CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
  } value;
} CUlaunchAttribute;
enum { CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4 };
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;
typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 0x01,
  CU_MEMORYTYPE_DEVICE = 0x02,
  CU_MEMORYTYPE_ARRAY = 0x03,
  CU_MEMORYTYPE_UNIFIED = 0x04
} CUmemorytype;
typedef struct CUDA_MEMCPY2D_st {
  size_t srcXInBytes;
  size_t srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes;
  size_t dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D;
typedef struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void *reserved0;
  size_t srcPitch;
  size_t srcHeight;
  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void *reserved1;
  size_t dstPitch;
  size_t dstHeight;
  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
} CUDA_MEMCPY3D;
typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  CU_POINTER_ATTRIBUTE_MAPPED = 13,
  CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16,
  CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17
} CUpointer_attribute;
typedef enum CUmoduleLoadingMode_enum {
  CU_MODULE_EAGER_LOADING = 0x1,
  CU_MODULE_LAZY_LOADING = 0x2
} CUmoduleLoadingMode;
typedef enum CUfunc_cache_enum { CU_FUNC_CACHE_PREFER_NONE = 0x00, CU_FUNC_CACHE_PREFER_EQUAL = 0x03 } CUfunc_cache;
typedef enum CUsharedconfig_enum {
  CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE = 0x00,
  CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE = 0x02
} CUsharedconfig;
/* JIT linking, graphs and stream capture: declared so that the simulator answers them
 * (docs/simulator.md says what it does with them). */
typedef struct CUlinkState_st *CUlinkState;
typedef enum CUjitInputType_enum {
  CU_JIT_INPUT_CUBIN = 0,
  CU_JIT_INPUT_PTX = 1,
  CU_JIT_INPUT_FATBINARY = 2
} CUjitInputType;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef enum CUgraphNodeType_enum { CU_GRAPH_NODE_TYPE_KERNEL = 0 } CUgraphNodeType;
typedef struct CUDA_KERNEL_NODE_PARAMS_v1_st CUDA_KERNEL_NODE_PARAMS_v1;
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;
/* Stream memory operations (cuStreamWaitValue32, cuStreamBatchMemOp). */
typedef uint32_t cuuint32_t;
enum {
  CU_STREAM_WAIT_VALUE_GEQ = 0x0,
  CU_STREAM_WAIT_VALUE_EQ = 0x1,
  CU_STREAM_WAIT_VALUE_AND = 0x2,
  CU_STREAM_WAIT_VALUE_NOR = 0x3,
  CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
};
typedef enum CUstreamBatchMemOpType_enum {
  CU_STREAM_MEM_OP_WAIT_VALUE_32 = 1,
  CU_STREAM_MEM_OP_WRITE_VALUE_32 = 2,
  CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES = 3,
  CU_STREAM_MEM_OP_WAIT_VALUE_64 = 4,
  CU_STREAM_MEM_OP_WRITE_VALUE_64 = 5,
  CU_STREAM_MEM_OP_BARRIER = 6
} CUstreamBatchMemOpType;
typedef struct CUstreamMemOpValueParams_st { /* waitValue and writeValue share this layout */
  CUstreamBatchMemOpType operation;
  CUdeviceptr address;
  union {
    cuuint32_t value;
    cuuint64_t value64;
  };
  unsigned int flags;
  CUdeviceptr alias;
} CUstreamMemOpValueParams;
typedef union CUstreamBatchMemOpParams_union {
  CUstreamBatchMemOpType operation;
  CUstreamMemOpValueParams waitValue;
  CUstreamMemOpValueParams writeValue;
  cuuint64_t pad[6];
} CUstreamBatchMemOpParams;
#define CU_DEVICE_CPU ((CUdevice)-1)

/* X(name, (parameters), (arguments)) for every entry point. */
/* clang-format off */
#define LG_CUDA_FUNCTIONS(X)                                                                    \
  X(cuInit, (unsigned int Flags), (Flags))                                                      \
  X(cuDriverGetVersion, (int *driverVersion), (driverVersion))                                  \
  X(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))                           \
  X(cuDeviceGetCount, (int *count), (count))                                                    \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev))                     \
  X(cuDeviceTotalMem, (unsigned int *bytes, CUdevice_v1 dev), (bytes, dev))                     \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))                          \
  X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev)) \
  X(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice_v1 dev), (pctx, flags, dev))   \
  X(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))   \
  X(cuCtxCreate_v3,                                                                             \
    (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags,    \
     CUdevice dev),                                                                             \
    (pctx, paramsArray, numParams, flags, dev))                                                 \
  X(cuCtxCreate_v4,                                                                             \
    (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags, CUdevice dev),  \
    (pctx, ctxCreateParams, flags, dev))                                                        \
  X(cuCtxDestroy, (CUcontext ctx), (ctx))                                                       \
  X(cuCtxDestroy_v2, (CUcontext ctx), (ctx))                                                    \
  X(cuCtxSetCurrent, (CUcontext ctx), (ctx))                                                    \
  X(cuCtxGetCurrent, (CUcontext * pctx), (pctx))                                                \
  X(cuCtxGetDevice, (CUdevice * device), (device))                                              \
  X(cuCtxGetId, (CUcontext ctx, unsigned long long *ctxId), (ctx, ctxId))                       \
  X(cuCtxPushCurrent, (CUcontext ctx), (ctx))                                                   \
  X(cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))                                                \
  X(cuCtxPopCurrent, (CUcontext * pctx), (pctx))                                                \
  X(cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))                                             \
  X(cuCtxSynchronize, (void), ())                                                               \
  X(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))                                                \
  X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev))                    \
  X(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev))                                           \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))                                        \
  X(cuDevicePrimaryCtxReset, (CUdevice dev), (dev))                                             \
  X(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev))                                          \
  X(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active),               \
    (dev, flags, active))                                                                       \
  X(cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize), (dptr, bytesize))               \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                     \
  X(cuMemFree, (CUdeviceptr_v1 dptr), (dptr))                                                   \
  X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                   \
  X(cuMemAllocPitch,                                                                            \
    (CUdeviceptr_v1 * dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height, \
     unsigned int ElementSizeBytes),                                                            \
    (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                     \
  X(cuMemAllocPitch_v2,                                                                         \
    (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                   \
     unsigned int ElementSizeBytes),                                                            \
    (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                     \
  X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),               \
    (dptr, bytesize, flags))                                                                    \
  X(cuMemAllocHost, (void **pp, unsigned int bytesize), (pp, bytesize))                         \
  X(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))                            \
  X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))    \
  X(cuMemFreeHost, (void *p), (p))                                                              \
  X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),                   \
    (dptr, bytesize, hStream))                                                                  \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),              \
    (dptr, bytesize, hStream))                                                                  \
  X(cuMemAllocFromPoolAsync,                                                                    \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
    (dptr, bytesize, pool, hStream))                                                            \
  X(cuMemAllocFromPoolAsync_ptsz,                                                               \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
    (dptr, bytesize, pool, hStream))                                                            \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                      \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                 \
  X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev))        \
  X(cuMemGetDefaultMemPool, (CUmemoryPool * pool_out, CUmemLocation * location, CUmemAllocationType type), \
    (pool_out, location, type))                                                                 \
  X(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps), (pool, poolProps))  \
  X(cuMemPoolDestroy, (CUmemoryPool pool), (pool))                                              \
  X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))        \
  X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),          \
    (pool, attr, value))                                                                        \
  X(cuMemCreate,                                                                                \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,        \
     unsigned long long flags),                                                                 \
    (handle, size, prop, flags))                                                                \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                              \
  X(cuMemAddressReserve,                                                                        \
    (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags), \
    (ptr, size, alignment, addr, flags))                                                        \
  X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))                              \
  X(cuMemMap,                                                                                   \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,          \
     unsigned long long flags),                                                                 \
    (ptr, size, offset, handle, flags))                                                         \
  X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))                                    \
  X(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),  \
    (ptr, size, desc, count))                                                                   \
  X(cuMemGetAllocationGranularity,                                                              \
    (size_t * granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option), \
    (granularity, prop, option))                                                                \
  X(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void *addr), (handle, addr)) \
  X(cuMemExportToShareableHandle,                                                               \
    (void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType, \
     unsigned long long flags),                                                                 \
    (shareableHandle, handle, handleType, flags))                                               \
  X(cuMemImportFromShareableHandle,                                                             \
    (CUmemGenericAllocationHandle * handle, void *osHandle, CUmemAllocationHandleType shHandleType), \
    (handle, osHandle, shHandleType))                                                           \
  X(cuArrayCreate, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray),          \
    (pHandle, pAllocateArray))                                                                  \
  X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),          \
    (pHandle, pAllocateArray))                                                                  \
  X(cuArray3DCreate, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray),      \
    (pHandle, pAllocateArray))                                                                  \
  X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),      \
    (pHandle, pAllocateArray))                                                                  \
  X(cuMipmappedArrayCreate,                                                                     \
    (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,            \
     unsigned int numMipmapLevels),                                                             \
    (pHandle, pMipmappedArrayDesc, numMipmapLevels))                                            \
  X(cuArrayDestroy, (CUarray hArray), (hArray))                                                 \
  X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))             \
  X(cuIpcGetMemHandle, (CUipcMemHandle * pHandle, CUdeviceptr dptr), (pHandle, dptr))           \
  X(cuIpcOpenMemHandle, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),       \
    (pdptr, handle, Flags))                                                                     \
  X(cuIpcOpenMemHandle_v2, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),    \
    (pdptr, handle, Flags))                                                                     \
  X(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))                                            \
  X(cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags))    \
  X(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags)) \
  X(cuMemHostUnregister, (void *p), (p))                                                        \
  X(cuImportExternalMemory,                                                                     \
    (CUexternalMemory * extMem_out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *memHandleDesc),     \
    (extMem_out, memHandleDesc))                                                                \
  X(cuExternalMemoryGetMappedBuffer,                                                            \
    (CUdeviceptr * devPtr, CUexternalMemory extMem, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *bufferDesc), \
    (devPtr, extMem, bufferDesc))                                                               \
  X(cuDestroyExternalMemory, (CUexternalMemory extMem), (extMem))                               \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),            \
    (dstDevice, srcHost, ByteCount))                                                            \
  X(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),       \
    (dstDevice, srcHost, ByteCount))                                                            \
  X(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),                  \
    (dstHost, srcDevice, ByteCount))                                                            \
  X(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),             \
    (dstHost, srcDevice, ByteCount))                                                            \
  X(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),          \
    (dstDevice, srcDevice, ByteCount))                                                          \
  X(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),     \
    (dstDevice, srcDevice, ByteCount))                                                          \
  X(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N))     \
  X(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N)) \
  X(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N))     \
  X(cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N)) \
  X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                           \
  X(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t * psize, CUdeviceptr dptr), (pbase, psize, dptr)) \
  X(cuModuleLoadData, (CUmodule * module, const void *image), (module, image))                    \
  X(cuModuleUnload, (CUmodule hmod), (hmod))                                                    \
  X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name), (hfunc, hmod, name)) \
  X(cuLaunchKernel,                                                                             \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,          \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),         \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
     kernelParams, extra))                                                                      \
  X(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags))               \
  X(cuStreamDestroy, (CUstream hStream), (hStream))                                             \
  X(cuStreamDestroy_v2, (CUstream hStream), (hStream))                                          \
  X(cuStreamSynchronize, (CUstream hStream), (hStream))                                         \
  X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))                                    \
  X(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr))                         \
  X(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr))                       \
  X(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev), (uuid, dev))                                 \
  X(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev), (uuid, dev))                              \
  X(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev), (pciBusId, len, dev))          \
  X(cuDeviceGetByPCIBusId, (CUdevice * dev, const char *pciBusId), (dev, pciBusId))              \
  X(cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev),                 \
    (canAccessPeer, dev, peerDev))                                                              \
  X(cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags), (dev, flags))             \
  X(cuCtxGetFlags, (unsigned int *flags), (flags))                                               \
  X(cuCtxGetApiVersion, (CUcontext ctx, unsigned int *version), (ctx, version))                  \
  X(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx), (device, ctx))                        \
  X(cuCtxGetLimit, (size_t * pvalue, CUlimit limit), (pvalue, limit))                            \
  X(cuCtxSetLimit, (CUlimit limit, size_t value), (limit, value))                                \
  X(cuCtxGetCacheConfig, (CUfunc_cache * pconfig), (pconfig))                                    \
  X(cuCtxSetCacheConfig, (CUfunc_cache config), (config))                                        \
  X(cuCtxGetSharedMemConfig, (CUsharedconfig * pConfig), (pConfig))                              \
  X(cuCtxSetSharedMemConfig, (CUsharedconfig config), (config))                                  \
  X(cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority),                    \
    (leastPriority, greatestPriority))                                                          \
  X(cuModuleGetLoadingMode, (CUmoduleLoadingMode * mode), (mode))                               \
  X(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount)) \
  X(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount)) \
  X(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream)) \
  X(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream)) \
  X(cuMemcpyHtoDAsync_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), (dstDevice, srcHost, ByteCount, hStream)) \
  X(cuMemcpyDtoHAsync_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstHost, srcDevice, ByteCount, hStream)) \
  X(cuMemcpyDtoDAsync_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstDevice, srcDevice, ByteCount, hStream)) \
  X(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream)) \
  X(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream), (dstDevice, us, N, hStream)) \
  X(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), (dstDevice, ui, N, hStream)) \
  X(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), (dstDevice, srcHost, ByteCount, hStream)) \
  X(cuMemcpyDtoHAsync_v2_ptsz, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstHost, srcDevice, ByteCount, hStream)) \
  X(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstDevice, srcDevice, ByteCount, hStream)) \
  X(cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream)) \
  X(cuMemsetD16Async_ptsz, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream), (dstDevice, us, N, hStream)) \
  X(cuMemsetD32Async_ptsz, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), (dstDevice, ui, N, hStream)) \
  X(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N)) \
  X(cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority), (phStream, flags, priority)) \
  X(cuStreamQuery, (CUstream hStream), (hStream)) \
  X(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags), (hStream, hEvent, Flags)) \
  X(cuStreamGetFlags, (CUstream hStream, unsigned int *flags), (hStream, flags)) \
  X(cuStreamGetPriority, (CUstream hStream, int *priority), (hStream, priority)) \
  X(cuStreamGetId, (CUstream hStream, unsigned long long *streamId), (hStream, streamId)) \
  X(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData), (hStream, fn, userData)) \
  X(cuStreamAddCallback, (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags), (hStream, callback, userData, flags)) \
  X(cuStreamQuery_ptsz, (CUstream hStream), (hStream)) \
  X(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags), (hStream, hEvent, Flags)) \
  X(cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags), (hStream, flags)) \
  X(cuStreamGetPriority_ptsz, (CUstream hStream, int *priority), (hStream, priority)) \
  X(cuStreamGetId_ptsz, (CUstream hStream, unsigned long long *streamId), (hStream, streamId)) \
  X(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData), (hStream, fn, userData)) \
  X(cuStreamAddCallback_ptsz, (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags), (hStream, callback, userData, flags)) \
  X(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), (hStream, pctx)) \
  X(cuEventCreate, (CUevent *phEvent, unsigned int Flags), (phEvent, Flags)) \
  X(cuEventDestroy_v2, (CUevent hEvent), (hEvent)) \
  X(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream)) \
  X(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), (hEvent, hStream)) \
  X(cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags), (hEvent, hStream, flags)) \
  X(cuEventRecordWithFlags_ptsz, (CUevent hEvent, CUstream hStream, unsigned int flags), (hEvent, hStream, flags)) \
  X(cuEventQuery, (CUevent hEvent), (hEvent)) \
  X(cuEventSynchronize, (CUevent hEvent), (hEvent)) \
  X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd), (pMilliseconds, hStart, hEnd)) \
  X(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd), (pMilliseconds, hStart, hEnd)) \
  X(cuLaunchKernel_ptsz,                                                                        \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),         \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
     kernelParams, extra))                                                                      \
  X(cuLibraryLoadData,                                                                          \
    (CUlibrary * library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,  \
     unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,   \
     unsigned int numLibraryOptions),                                                           \
    (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,               \
     libraryOptionValues, numLibraryOptions))                                                   \
  X(cuLibraryUnload, (CUlibrary library), (library))                                            \
  X(cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name),              \
    (pKernel, library, name))                                                                   \
  X(cuLibraryGetGlobal, (CUdeviceptr * dptr, size_t *bytes, CUlibrary library, const char *name), \
    (dptr, bytes, library, name))                                                               \
  X(cuLibraryGetManaged, (CUdeviceptr * dptr, size_t *bytes, CUlibrary library, const char *name), \
    (dptr, bytes, library, name))                                                               \
  X(cuKernelGetLibrary, (CUlibrary * pLib, CUkernel kernel), (pLib, kernel))                   \
  X(cuModuleLoadDataEx,                                                                         \
    (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,      \
     void **optionValues),                                                                      \
    (module, image, numOptions, options, optionValues))                                         \
  X(cuModuleGetGlobal_v2, (CUdeviceptr * dptr, size_t *bytes, CUmodule hmod, const char *name), \
    (dptr, bytes, hmod, name))                                                                  \
  X(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra), \
    (config, f, kernelParams, extra))                                                           \
  X(cuFuncSetCacheConfig, (CUfunction hfunc, CUfunc_cache config), (hfunc, config))             \
  X(cuLinkCreate_v2,                                                                            \
    (unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *stateOut), \
    (numOptions, options, optionValues, stateOut))                                              \
  X(cuLinkAddData_v2,                                                                           \
    (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,         \
     unsigned int numOptions, CUjit_option *options, void **optionValues),                      \
    (state, type, data, size, name, numOptions, options, optionValues))                         \
  X(cuLinkComplete, (CUlinkState state, void **cubinOut, size_t *sizeOut), (state, cubinOut, sizeOut)) \
  X(cuLinkDestroy, (CUlinkState state), (state))                                                \
  X(cuStreamWaitValue32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), \
    (stream, addr, value, flags))                                                               \
  X(cuStreamBatchMemOp,                                                                         \
    (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), \
    (stream, count, paramArray, flags))                                                         \
  X(cuMemPrefetchAsync, (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream), \
    (devPtr, count, dstDevice, hStream))                                                        \
  X(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))     \
  X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode), (mode))                    \
  X(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))               \
  X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),              \
    (hStream, captureStatus))                                                                   \
  X(cuStreamGetCaptureInfo_v2,                                                                  \
    (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,            \
     CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),    \
    (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))     \
  X(cuGraphInstantiate,                                                                         \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,      \
     size_t bufferSize),                                                                        \
    (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))                                  \
  X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))           \
  X(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))                                 \
  X(cuGraphDestroy, (CUgraph hGraph), (hGraph))                                                 \
  X(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes), (hGraph, nodes, numNodes)) \
  X(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType *type), (hNode, type))              \
  X(cuGraphKernelNodeGetParams, (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams),    \
    (hNode, nodeParams))                                                                        \
  X(cuGraphExecKernelNodeSetParams,                                                             \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams),  \
    (hGraphExec, hNode, nodeParams))                                                            \
  X(cuStreamWaitValue32_ptsz, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), \
    (stream, addr, value, flags))                                                               \
  X(cuStreamBatchMemOp_ptsz,                                                                    \
    (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), \
    (stream, count, paramArray, flags))                                                         \
  X(cuMemPrefetchAsync_ptsz, (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream), \
    (devPtr, count, dstDevice, hStream))                                                        \
  X(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode)) \
  X(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))          \
  X(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus),         \
    (hStream, captureStatus))                                                                   \
  X(cuStreamGetCaptureInfo_v2_ptsz,                                                             \
    (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,            \
     CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),    \
    (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))     \
  X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))      \
  X(cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags), (peerContext, Flags))  \
  X(cuCtxDisablePeerAccess, (CUcontext peerContext), (peerContext))                             \
  X(cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel), (pFunc, kernel))                \
  X(cuKernelGetName, (const char **name, CUkernel hfunc), (name, hfunc))                        \
  X(cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc),               \
    (pi, attrib, hfunc))                                                                        \
  X(cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev), \
    (pi, attrib, kernel, dev))                                                                  \
  X(cuFuncSetAttribute, (CUfunction hfunc, CUfunction_attribute attrib, int value),             \
    (hfunc, attrib, value))                                                                     \
  X(cuKernelSetAttribute, (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev), \
    (attrib, val, kernel, dev))                                                                 \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                                                \
    (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize),                    \
    (numBlocks, func, blockSize, dynamicSMemSize))                                              \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                                       \
    (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags), \
    (numBlocks, func, blockSize, dynamicSMemSize, flags))                                       \
  X(cuOccupancyAvailableDynamicSMemPerBlock,                                                    \
    (size_t * dynamicSmemSize, CUfunction func, int numBlocks, int blockSize),                  \
    (dynamicSmemSize, func, numBlocks, blockSize))                                              \
  X(cuOccupancyMaxActiveClusters, (int *numClusters, CUfunction func, const CUlaunchConfig *config), \
    (numClusters, func, config))                                                                \
  X(cuOccupancyMaxPotentialClusterSize, (int *clusterSize, CUfunction func, const CUlaunchConfig *config), \
    (clusterSize, func, config))                                                                \
  X(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))                                      \
  X(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))                                 \
  X(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))                             \
  X(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))                        \
  X(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))       \
  X(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))  \
  X(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy))                                      \
  X(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy))                                 \
  X(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))       \
  X(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))  \
  X(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),        \
    (data, attribute, ptr))                                                                     \
  X(cuPointerGetAttributes,                                                                     \
    (unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr), \
    (numAttributes, attributes, data, ptr))                                                     \
  X(cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId),              \
    (ppExportTable, pExportTableId))                                                            \
  X(cuGetProcAddress,                                                                           \
    (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),                        \
    (symbol, pfn, cudaVersion, flags))                                                          \
  X(cuGetProcAddress_v2,                                                                        \
    (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                         \
     CUdriverProcAddressQueryResult *symbolStatus),                                             \
    (symbol, pfn, cudaVersion, flags, symbolStatus))

/* clang-format on */
#define LG_CUDA_DECLARE_PFN(name, params, args) typedef CUresult(*lg_pfn_##name) params;
LG_CUDA_FUNCTIONS(LG_CUDA_DECLARE_PFN)
#undef LG_CUDA_DECLARE_PFN

#ifndef LG_CUDA_NO_PROTOTYPES
#define LG_CUDA_DECLARE_PROTOTYPE(name, params, args) CUresult name params;
LG_CUDA_FUNCTIONS(LG_CUDA_DECLARE_PROTOTYPE)
#undef LG_CUDA_DECLARE_PROTOTYPE
#endif

/* As in cuda.h, application code calling the unversioned names gets the current variants.
 * Code that defines the entry points themselves (the simulator, the preload) defines
 * LG_CUDA_DEFINES_ENTRY_POINTS to see every variant under its exported name. */
#ifndef LG_CUDA_DEFINES_ENTRY_POINTS
#define cuDeviceTotalMem cuDeviceTotalMem_v2
#define cuCtxCreate cuCtxCreate_v4
#define cuCtxDestroy cuCtxDestroy_v2
#define cuCtxPushCurrent cuCtxPushCurrent_v2
#define cuCtxPopCurrent cuCtxPopCurrent_v2
#define cuMemGetInfo cuMemGetInfo_v2
#define cuMemGetAddressRange cuMemGetAddressRange_v2
#define cuMemAlloc cuMemAlloc_v2
#define cuMemAllocPitch cuMemAllocPitch_v2
#define cuMemFree cuMemFree_v2
#define cuMemAllocHost cuMemAllocHost_v2
#define cuMemcpyHtoD cuMemcpyHtoD_v2
#define cuMemcpyDtoH cuMemcpyDtoH_v2
#define cuMemcpyDtoD cuMemcpyDtoD_v2
#define cuMemsetD8 cuMemsetD8_v2
#define cuMemsetD32 cuMemsetD32_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuDevicePrimaryCtxReset cuDevicePrimaryCtxReset_v2
#define cuGetProcAddress cuGetProcAddress_v2
#define cuArrayCreate cuArrayCreate_v2
#define cuArray3DCreate cuArray3DCreate_v2
#define cuIpcOpenMemHandle cuIpcOpenMemHandle_v2
#define cuMemHostRegister cuMemHostRegister_v2
#endif

#ifdef __cplusplus
}
#endif

#endif /* LEASEGUARD_ABI_LG_CUDA_H */
