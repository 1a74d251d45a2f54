// The exported CUDA driver entry points of the simulated libcuda.so.1.
//
// Every function starts with LG_SIM_ENTRY so tests can inject a failure into any of them
// (sim_faults.h). The library is linked with -Bsymbolic-functions, so the addresses it
// hands out through cuGetProcAddress are its own functions even under an LD_PRELOAD that
// defines the same names.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "lg_cuda.h"
#include "sim_device.h"
#include "sim_entry.h"

using leaseguard::sim::MemoryKind;
using leaseguard::sim::SimDriver;

namespace {

constexpr int kDriverVersion = 13000;

SimDriver &driver() { return SimDriver::instance(); }

CUresult check_device(CUdevice dev) {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= driver().device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult allocate_into(CUdeviceptr *dptr, size_t bytes, MemoryKind kind) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CUresult status = driver().allocate(bytes, kind, &address);
  if (status == CUDA_SUCCESS) *dptr = address;
  return status;
}

// LEASEGUARD_SIM_REENTER=1: entry points that can be built on others call them through the
// global scope (tests of an interposer's re-entry handling).
bool reenter_through_exports() {
  static const bool enabled = [] {
    const char *value = std::getenv("LEASEGUARD_SIM_REENTER");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

CUresult free_device(CUdeviceptr dptr) {
  if (dptr == 0) return CUDA_SUCCESS;
  return driver().release(dptr, {MemoryKind::Device, MemoryKind::Pitched, MemoryKind::Managed, MemoryKind::Async,
                                 MemoryKind::Legacy32, MemoryKind::ExternalBuffer});
}

CUresult pitch_alloc(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned element_bytes) {
  if (dptr == nullptr || pitch == nullptr || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (element_bytes != 4 && element_bytes != 8 && element_bytes != 16) return CUDA_ERROR_INVALID_VALUE;
  size_t row = (width + 511) / 512 * 512;  // the real driver pads rows to its texture pitch
  if (height > SIZE_MAX / row) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult status = allocate_into(dptr, row * height, MemoryKind::Pitched);
  if (status == CUDA_SUCCESS) *pitch = row;
  return status;
}

CUresult host_alloc(void **pp, size_t bytes) {
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr address = 0;
  CUresult status = allocate_into(&address, bytes, MemoryKind::Host);
  if (status == CUDA_SUCCESS) *pp = reinterpret_cast<void *>(address);
  return status;
}

CUresult async_alloc(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool = nullptr) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CUresult status =
      driver().allocate(bytes, MemoryKind::Async, &address, reinterpret_cast<leaseguard::sim::SimPool *>(pool));
  if (status == CUDA_SUCCESS) *dptr = address;
  return status;
}

CUresult async_free(CUdeviceptr dptr) {
  if (dptr == 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().release(dptr, {MemoryKind::Async, MemoryKind::Device});
}

CUresult copy(void *dst, const void *src, size_t bytes) {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult sticky = driver().sticky_error(); sticky != CUDA_SUCCESS) return sticky;  // a faulted kernel's context
  if (bytes != 0 && (dst == nullptr || src == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(dst, src, bytes);
  return CUDA_SUCCESS;
}

CUresult check_device_range(CUdeviceptr address, size_t bytes) {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return driver().range_valid(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

struct ErrorText {
  CUresult code;
  const char *name;
  const char *text;
};

constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {CUDA_ERROR_NOT_MAPPED, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText *find_error(CUresult code) {
  for (const auto &error : kErrors)
    if (error.code == code) return &error;
  return nullptr;
}

}  // namespace

LG_SIM_EXPORT CUresult cuInit(unsigned int Flags) {
  LG_SIM_ENTRY(cuInit);
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().init();
}

LG_SIM_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
  LG_SIM_ENTRY(cuDriverGetVersion);
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  LG_SIM_ENTRY(cuDeviceGet);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(ordinal); status != CUDA_SUCCESS) return status;
  *device = ordinal;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceGetCount(int *count) {
  LG_SIM_ENTRY(cuDeviceGetCount);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  *count = driver().device_count();
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetName);
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  const char *text = "leaseguard simulated GPU";
  std::strncpy(name, text, static_cast<size_t>(len));
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice_v1 dev) {
  LG_SIM_ENTRY(cuDeviceTotalMem);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  size_t total = driver().capacity();
  *bytes = total > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(total);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceTotalMem_v2);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  *bytes = driver().capacity();
  return CUDA_SUCCESS;
}

// What cuDeviceGetAttribute answers: a Hopper GPU (an H200's figures where they differ by
// model), numbered as cuda.h numbers CUdevice_attribute. Attributes not listed are 0 (not
// supported, or a count of none). The PCI bus is per device (sim_cuda_exports_context.cpp).
struct DeviceAttribute {
  int attribute;
  int value;
};
constexpr DeviceAttribute kDeviceAttributes[] = {
    {1, 1024},          // MAX_THREADS_PER_BLOCK
    {2, 1024},          // MAX_BLOCK_DIM_X
    {3, 1024},          // MAX_BLOCK_DIM_Y
    {4, 64},            // MAX_BLOCK_DIM_Z
    {5, 2147483647},    // MAX_GRID_DIM_X
    {6, 65535},         // MAX_GRID_DIM_Y
    {7, 65535},         // MAX_GRID_DIM_Z
    {8, 49152},         // MAX_SHARED_MEMORY_PER_BLOCK
    {9, 65536},         // TOTAL_CONSTANT_MEMORY
    {10, 32},           // WARP_SIZE
    {11, 2147483647},   // MAX_PITCH
    {12, 65536},        // MAX_REGISTERS_PER_BLOCK
    {13, 1980000},      // CLOCK_RATE
    {14, 512},          // TEXTURE_ALIGNMENT
    {15, 1},            // GPU_OVERLAP
    {16, 132},          // MULTIPROCESSOR_COUNT
    {19, 1},            // CAN_MAP_HOST_MEMORY
    {21, 131072},       // MAXIMUM_TEXTURE1D_WIDTH
    {22, 131072},       // MAXIMUM_TEXTURE2D_WIDTH
    {23, 65536},        // MAXIMUM_TEXTURE2D_HEIGHT
    {24, 16384},        // MAXIMUM_TEXTURE3D_WIDTH
    {25, 16384},        // MAXIMUM_TEXTURE3D_HEIGHT
    {26, 16384},        // MAXIMUM_TEXTURE3D_DEPTH
    {27, 32768},        // MAXIMUM_TEXTURE2D_LAYERED_WIDTH
    {28, 32768},        // MAXIMUM_TEXTURE2D_LAYERED_HEIGHT
    {29, 2048},         // MAXIMUM_TEXTURE2D_LAYERED_LAYERS
    {30, 512},          // SURFACE_ALIGNMENT
    {31, 1},            // CONCURRENT_KERNELS
    {32, 1},            // ECC_ENABLED
    {36, 3201000},      // MEMORY_CLOCK_RATE
    {37, 6144},         // GLOBAL_MEMORY_BUS_WIDTH
    {38, 52428800},     // L2_CACHE_SIZE
    {39, 2048},         // MAX_THREADS_PER_MULTIPROCESSOR
    {40, 3},            // ASYNC_ENGINE_COUNT
    {41, 1},            // UNIFIED_ADDRESSING
    {42, 32768},        // MAXIMUM_TEXTURE1D_LAYERED_WIDTH
    {43, 2048},         // MAXIMUM_TEXTURE1D_LAYERED_LAYERS
    {45, 32768},        // MAXIMUM_TEXTURE2D_GATHER_WIDTH
    {46, 32768},        // MAXIMUM_TEXTURE2D_GATHER_HEIGHT
    {47, 8192},         // MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE
    {48, 8192},         // MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE
    {49, 32768},        // MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE
    {51, 32},           // TEXTURE_PITCH_ALIGNMENT
    {52, 32768},        // MAXIMUM_TEXTURECUBEMAP_WIDTH
    {53, 32768},        // MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH
    {54, 2046},         // MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS
    {55, 32768},        // MAXIMUM_SURFACE1D_WIDTH
    {56, 131072},       // MAXIMUM_SURFACE2D_WIDTH
    {57, 65536},        // MAXIMUM_SURFACE2D_HEIGHT
    {58, 16384},        // MAXIMUM_SURFACE3D_WIDTH
    {59, 16384},        // MAXIMUM_SURFACE3D_HEIGHT
    {60, 16384},        // MAXIMUM_SURFACE3D_DEPTH
    {61, 32768},        // MAXIMUM_SURFACE1D_LAYERED_WIDTH
    {62, 2048},         // MAXIMUM_SURFACE1D_LAYERED_LAYERS
    {63, 32768},        // MAXIMUM_SURFACE2D_LAYERED_WIDTH
    {64, 32768},        // MAXIMUM_SURFACE2D_LAYERED_HEIGHT
    {65, 2048},         // MAXIMUM_SURFACE2D_LAYERED_LAYERS
    {66, 32768},        // MAXIMUM_SURFACECUBEMAP_WIDTH
    {67, 32768},        // MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH
    {68, 2046},         // MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
    {69, 268435456},    // MAXIMUM_TEXTURE1D_LINEAR_WIDTH
    {70, 131072},       // MAXIMUM_TEXTURE2D_LINEAR_WIDTH
    {71, 65000},        // MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
    {72, 2097120},      // MAXIMUM_TEXTURE2D_LINEAR_PITCH
    {73, 32768},        // MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH
    {74, 32768},        // MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
    {75, 9},            // COMPUTE_CAPABILITY_MAJOR
    {76, 0},            // COMPUTE_CAPABILITY_MINOR
    {77, 32768},        // MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
    {78, 1},            // STREAM_PRIORITIES_SUPPORTED
    {79, 1},            // GLOBAL_L1_CACHE_SUPPORTED
    {80, 1},            // LOCAL_L1_CACHE_SUPPORTED
    {81, 233472},       // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    {82, 65536},        // MAX_REGISTERS_PER_MULTIPROCESSOR
    {83, 1},            // MANAGED_MEMORY
    {87, 2},            // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
    {89, 1},            // CONCURRENT_MANAGED_ACCESS
    {90, 1},            // COMPUTE_PREEMPTION_SUPPORTED
    {91, 1},            // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
    {95, 1},            // COOPERATIVE_LAUNCH
    {97, 232448},       // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    {99, 1},            // HOST_REGISTER_SUPPORTED
    {102, 1},           // VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
    {103, 1},           // HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
    {106, 32},          // MAX_BLOCKS_PER_MULTIPROCESSOR
    {108, 32505856},    // MAX_PERSISTING_L2_CACHE_SIZE
    {109, 134213632},   // MAX_ACCESS_POLICY_WINDOW_SIZE
    {111, 1024},        // RESERVED_SHARED_MEMORY_PER_BLOCK
    {112, 1},           // SPARSE_CUDA_ARRAY_SUPPORTED
    {113, 1},           // READ_ONLY_HOST_REGISTER_SUPPORTED
    {115, 1},           // MEMORY_POOLS_SUPPORTED
    {119, 1},           // MEMPOOL_SUPPORTED_HANDLE_TYPES
    {120, 1},           // CLUSTER_LAUNCH
    {121, 1},           // DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED
    {122, 1},           // CAN_USE_64_BIT_STREAM_MEM_OPS
    {123, 1},           // CAN_USE_STREAM_WAIT_VALUE_NOR
    {125, 1},           // IPC_EVENT_SUPPORTED
    {126, 4},           // MEM_SYNC_DOMAIN_COUNT
    {127, 1},           // TENSOR_MAP_ACCESS_SUPPORTED
    {129, 1},           // UNIFIED_FUNCTION_POINTERS
    {131, -1},          // NUMA_ID
    {134, -1},          // HOST_NUMA_ID
    {139, 0x233510de},  // GPU_PCI_DEVICE_ID (an H200 SXM: device 0x2335, vendor NVIDIA)
};

LG_SIM_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetAttribute);
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
    *pi = leaseguard::sim::kFirstPciBus + dev;
    return CUDA_SUCCESS;
  }
  *pi = 0;
  for (const DeviceAttribute &known : kDeviceAttributes) {
    if (known.attribute != attrib) continue;
    *pi = known.value;
    break;
  }
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice_v1 dev) {
  LG_SIM_ENTRY(cuCtxCreate);
  (void)flags;
  return driver().create_context(dev, pctx);
}

LG_SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  LG_SIM_ENTRY(cuCtxCreate_v2);
  (void)flags;
  return driver().create_context(dev, pctx);
}

LG_SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                      unsigned int flags, CUdevice dev) {
  LG_SIM_ENTRY(cuCtxCreate_v3);
  (void)paramsArray;
  (void)flags;
  if (numParams < 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().create_context(dev, pctx);
}

LG_SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                      CUdevice dev) {
  LG_SIM_ENTRY(cuCtxCreate_v4);
  (void)ctxCreateParams;
  (void)flags;
  return driver().create_context(dev, pctx);
}

LG_SIM_EXPORT CUresult cuCtxDestroy(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxDestroy);
  const CUresult status = driver().destroy_context(ctx);
  driver().linger_after_destroy();
  return status;
}

LG_SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxDestroy_v2);
  const CUresult status = driver().destroy_context(ctx);
  driver().linger_after_destroy();
  return status;
}

LG_SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxSetCurrent);
  return driver().set_current(ctx);
}

LG_SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  LG_SIM_ENTRY(cuCtxGetCurrent);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const SimDriver &sim = driver();
  if (!sim.initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  *pctx = sim.current();
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  LG_SIM_ENTRY(cuCtxGetDevice);
  return driver().current_device(device);
}

LG_SIM_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
  LG_SIM_ENTRY(cuCtxGetId);
  return driver().context_id(ctx, ctxId);
}

// The CUDA 2.0 names, which the driver still exports with the same behaviour.
LG_SIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxPushCurrent);
  return driver().push_current(ctx);
}

LG_SIM_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) {
  LG_SIM_ENTRY(cuCtxPopCurrent);
  return driver().pop_current(pctx);
}

LG_SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxPushCurrent_v2);
  return driver().push_current(ctx);
}

LG_SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  LG_SIM_ENTRY(cuCtxPopCurrent_v2);
  return driver().pop_current(pctx);
}

// The profiler's bounds (cudaProfilerStart/Stop): nothing profiles the simulator.
LG_SIM_EXPORT CUresult cuProfilerStart(void) {
  LG_SIM_ENTRY(cuProfilerStart);
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return driver().current() == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuProfilerStop(void) {
  LG_SIM_ENTRY(cuProfilerStop);
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return driver().current() == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuCtxSynchronize(void) {
  LG_SIM_ENTRY(cuCtxSynchronize);
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return driver().current() == nullptr ? CUDA_ERROR_INVALID_CONTEXT : driver().sticky_error();
}

LG_SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxSynchronize_v2);
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return ctx == nullptr && driver().current() == nullptr ? CUDA_ERROR_INVALID_CONTEXT : driver().sticky_error(ctx);
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxRetain);
  return driver().retain_primary(dev, pctx);
}

namespace {
CUresult release_primary(CUdevice dev) {
  bool destroyed = false;
  const CUresult status = driver().release_primary(dev, &destroyed);
  if (destroyed) driver().linger_after_destroy();
  return status;
}
}  // namespace

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxRelease);
  return release_primary(dev);
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxRelease_v2);
  return release_primary(dev);
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxReset);
  return driver().reset_primary(dev);
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxReset_v2);
  return driver().reset_primary(dev);
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxGetState);
  return driver().primary_state(dev, flags, active);
}

LG_SIM_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  LG_SIM_ENTRY(cuMemAlloc);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CUresult status = driver().allocate(bytesize, MemoryKind::Legacy32, &address);
  if (status == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(address);
  return status;
}

LG_SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  LG_SIM_ENTRY(cuMemAlloc_v2);
  return allocate_into(dptr, bytesize, MemoryKind::Device);
}

LG_SIM_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  LG_SIM_ENTRY(cuMemFree);
  return free_device(dptr);
}

LG_SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  LG_SIM_ENTRY(cuMemFree_v2);
  return free_device(dptr);
}

LG_SIM_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                       unsigned int Height, unsigned int ElementSizeBytes) {
  LG_SIM_ENTRY(cuMemAllocPitch);
  if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  (void)ElementSizeBytes;
  size_t row = (WidthInBytes + 511u) / 512u * 512u;
  uint64_t address = 0;
  CUresult status = driver().allocate(row * Height, MemoryKind::Legacy32, &address);
  if (status == CUDA_SUCCESS) {
    *dptr = static_cast<CUdeviceptr_v1>(address);
    *pPitch = static_cast<unsigned>(row);
  }
  return status;
}

LG_SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                          unsigned int ElementSizeBytes) {
  LG_SIM_ENTRY(cuMemAllocPitch_v2);
  return pitch_alloc(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

LG_SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  LG_SIM_ENTRY(cuMemAllocManaged);
  if (flags != 1 && flags != 2) return CUDA_ERROR_INVALID_VALUE;  // GLOBAL or HOST attach
  if (reenter_through_exports()) {
    // As some drivers do: the work is done by calling another exported entry point, which an
    // interposer in the global scope sees as a call of its own.
    auto exported = reinterpret_cast<lg_pfn_cuMemAlloc_v2>(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    if (exported != nullptr) return exported(dptr, bytesize);
  }
  return allocate_into(dptr, bytesize, MemoryKind::Managed);
}

LG_SIM_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
  LG_SIM_ENTRY(cuMemAllocHost);
  return host_alloc(pp, bytesize);
}

LG_SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  LG_SIM_ENTRY(cuMemAllocHost_v2);
  return host_alloc(pp, bytesize);
}

LG_SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  LG_SIM_ENTRY(cuMemHostAlloc);
  if ((Flags & ~0xfu) != 0) return CUDA_ERROR_INVALID_VALUE;
  return host_alloc(pp, bytesize);
}

LG_SIM_EXPORT CUresult cuMemFreeHost(void *p) {
  LG_SIM_ENTRY(cuMemFreeHost);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().release(reinterpret_cast<uint64_t>(p), {MemoryKind::Host});
}

LG_SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  LG_SIM_ENTRY(cuMemAllocAsync);
  (void)hStream;
  return async_alloc(dptr, bytesize);
}

LG_SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  LG_SIM_ENTRY(cuMemAllocAsync_ptsz);
  (void)hStream;
  return async_alloc(dptr, bytesize);
}

LG_SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                               CUstream hStream) {
  LG_SIM_ENTRY(cuMemAllocFromPoolAsync);
  (void)hStream;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return async_alloc(dptr, bytesize, pool);
}

LG_SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                    CUstream hStream) {
  LG_SIM_ENTRY(cuMemAllocFromPoolAsync_ptsz);
  (void)hStream;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return async_alloc(dptr, bytesize, pool);
}

LG_SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  LG_SIM_ENTRY(cuMemFreeAsync);
  (void)hStream;
  return async_free(dptr);
}

LG_SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  LG_SIM_ENTRY(cuMemFreeAsync_ptsz);
  (void)hStream;
  return async_free(dptr);
}

LG_SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetDefaultMemPool);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  *pool_out = reinterpret_cast<CUmemoryPool>(driver().default_pool(dev));
  return CUDA_SUCCESS;
}

#define LG_SIM_COPY_HTOD(name)                                                                             \
  LG_SIM_EXPORT CUresult name(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {              \
    LG_SIM_ENTRY(name);                                                                                    \
    if (CUresult status = check_device_range(dstDevice, ByteCount); status != CUDA_SUCCESS) return status; \
    return copy(reinterpret_cast<void *>(dstDevice), srcHost, ByteCount);                                  \
  }
#define LG_SIM_COPY_DTOH(name)                                                                             \
  LG_SIM_EXPORT CUresult name(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {                    \
    LG_SIM_ENTRY(name);                                                                                    \
    if (CUresult status = check_device_range(srcDevice, ByteCount); status != CUDA_SUCCESS) return status; \
    return copy(dstHost, reinterpret_cast<const void *>(srcDevice), ByteCount);                            \
  }
#define LG_SIM_COPY_DTOD(name)                                                                              \
  LG_SIM_EXPORT CUresult name(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {             \
    LG_SIM_ENTRY(name);                                                                                     \
    if (CUresult status = check_device_range(srcDevice, ByteCount); status != CUDA_SUCCESS) return status;  \
    if (CUresult status = check_device_range(dstDevice, ByteCount); status != CUDA_SUCCESS) return status;  \
    return copy(reinterpret_cast<void *>(dstDevice), reinterpret_cast<const void *>(srcDevice), ByteCount); \
  }
LG_SIM_COPY_HTOD(cuMemcpyHtoD_v2)
LG_SIM_COPY_HTOD(cuMemcpyHtoD_v2_ptds)
LG_SIM_COPY_DTOH(cuMemcpyDtoH_v2)
LG_SIM_COPY_DTOH(cuMemcpyDtoH_v2_ptds)
LG_SIM_COPY_DTOD(cuMemcpyDtoD_v2)
LG_SIM_COPY_DTOD(cuMemcpyDtoD_v2_ptds)

#define LG_SIM_MEMSET(name, type)                                                                                 \
  LG_SIM_EXPORT CUresult name(CUdeviceptr dstDevice, type value, size_t N) {                                      \
    LG_SIM_ENTRY(name);                                                                                           \
    if (N > SIZE_MAX / sizeof(type)) return CUDA_ERROR_INVALID_VALUE;                                             \
    if (CUresult status = check_device_range(dstDevice, N * sizeof(type)); status != CUDA_SUCCESS) return status; \
    auto *out = reinterpret_cast<type *>(dstDevice);                                                              \
    for (size_t i = 0; i < N; ++i) out[i] = value;                                                                \
    return CUDA_SUCCESS;                                                                                          \
  }
LG_SIM_MEMSET(cuMemsetD8_v2, unsigned char)
LG_SIM_MEMSET(cuMemsetD8_v2_ptds, unsigned char)
LG_SIM_MEMSET(cuMemsetD32_v2, unsigned int)
LG_SIM_MEMSET(cuMemsetD32_v2_ptds, unsigned int)

LG_SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  LG_SIM_ENTRY(cuMemGetInfo_v2);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *total = driver().capacity();
  *free = *total - driver().used();
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  LG_SIM_ENTRY(cuStreamCreate);
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *phStream = reinterpret_cast<CUstream>(new leaseguard::sim::SimStream{Flags, 0});
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  LG_SIM_ENTRY(cuStreamDestroy);
  if (hStream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<leaseguard::sim::SimStream *>(hStream);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  LG_SIM_ENTRY(cuStreamDestroy_v2);
  if (hStream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<leaseguard::sim::SimStream *>(hStream);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  LG_SIM_ENTRY(cuStreamSynchronize);
  (void)hStream;  // simulated work completes when it is issued
  return driver().initialized() ? driver().sticky_error() : CUDA_ERROR_NOT_INITIALIZED;
}

LG_SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  LG_SIM_ENTRY(cuStreamSynchronize_ptsz);
  (void)hStream;
  return driver().initialized() ? driver().sticky_error() : CUDA_ERROR_NOT_INITIALIZED;
}

LG_SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
  LG_SIM_ENTRY(cuGetErrorName);
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = find_error(error);
  if (text == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = text->name;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
  LG_SIM_ENTRY(cuGetErrorString);
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = find_error(error);
  if (text == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = text->text;
  return CUDA_SUCCESS;
}
