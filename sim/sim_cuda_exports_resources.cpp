// The simulated driver's entry points for VMM, pools, arrays, IPC, host registration and
// external memory (the semantics are in sim_vmm.cpp, sim_pools.cpp and sim_objects.cpp).
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "lg_array_bytes.h"
#include "sim_device.h"
#include "sim_entry.h"
#include "sim_kernels.h"
#include "sim_libraries.h"
#include "sim_ptx_launch.h"

using leaseguard::sim::SimDriver;

namespace {

SimDriver &driver() { return SimDriver::instance(); }

CUresult array_create(CUarray *handle, size_t width, size_t height, size_t depth, CUarray_format format,
                      unsigned channels, unsigned flags) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = lg_array_bytes(width, height, depth, format, channels, flags, 1);
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void *array = nullptr;
  CUresult status = driver().create_array(bytes, false, &array);
  if (status == CUDA_SUCCESS) *handle = static_cast<CUarray>(array);
  return status;
}

CUresult ipc_open(CUdeviceptr *pdptr, const CUipcMemHandle &handle, unsigned flags) {
  if ((flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().ipc_open(pdptr, handle);
}

CUresult host_register(void *p, size_t bytesize, unsigned flags) {
  if ((flags & ~0x3fu) != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().register_host(p, bytesize);
}

}  // namespace

// Pools.
LG_SIM_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                              CUmemAllocationType type) {
  LG_SIM_ENTRY(cuMemGetDefaultMemPool);
  if (pool_out == nullptr || location == nullptr || type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto *pool = driver().default_pool(location->id);
  if (pool == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = reinterpret_cast<CUmemoryPool>(pool);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  LG_SIM_ENTRY(cuMemPoolCreate);
  return driver().create_pool(poolProps, pool);
}

LG_SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  LG_SIM_ENTRY(cuMemPoolDestroy);
  return driver().destroy_pool(pool);
}

LG_SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  LG_SIM_ENTRY(cuMemPoolTrimTo);
  (void)minBytesToKeep;
  return driver().trim_pool(pool);
}

LG_SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  LG_SIM_ENTRY(cuMemPoolGetAttribute);
  return driver().pool_attribute(pool, attr, value);
}

// Virtual memory management.
LG_SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                   unsigned long long flags) {
  LG_SIM_ENTRY(cuMemCreate);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().vmm_create(handle, size, prop);
}

LG_SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  LG_SIM_ENTRY(cuMemRelease);
  return driver().vmm_release(handle);
}

LG_SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                           unsigned long long flags) {
  LG_SIM_ENTRY(cuMemAddressReserve);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().vmm_reserve(ptr, size, alignment, addr);
}

LG_SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  LG_SIM_ENTRY(cuMemAddressFree);
  return driver().vmm_free_range(ptr, size);
}

LG_SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                unsigned long long flags) {
  LG_SIM_ENTRY(cuMemMap);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().vmm_map(ptr, size, offset, handle);
}

LG_SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  LG_SIM_ENTRY(cuMemUnmap);
  return driver().vmm_unmap(ptr, size);
}

LG_SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  LG_SIM_ENTRY(cuMemSetAccess);
  return driver().vmm_set_access(ptr, size, desc, count);
}

LG_SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                     CUmemAllocationGranularity_flags option) {
  LG_SIM_ENTRY(cuMemGetAllocationGranularity);
  if (granularity == nullptr || prop == nullptr ||
      (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  *granularity = SimDriver::kVmmGranularity;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  LG_SIM_ENTRY(cuMemRetainAllocationHandle);
  return driver().vmm_retain(handle, addr);
}

LG_SIM_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                    CUmemAllocationHandleType handleType, unsigned long long flags) {
  LG_SIM_ENTRY(cuMemExportToShareableHandle);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver().vmm_export(shareableHandle, handle, handleType);
}

LG_SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                      CUmemAllocationHandleType shHandleType) {
  LG_SIM_ENTRY(cuMemImportFromShareableHandle);
  return driver().vmm_import(handle, osHandle, shHandleType);
}

// Arrays.
LG_SIM_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray) {
  LG_SIM_ENTRY(cuArrayCreate);
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto &d = *pAllocateArray;
  return array_create(pHandle, d.Width, d.Height, 0, d.Format, d.NumChannels, 0);
}

LG_SIM_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  LG_SIM_ENTRY(cuArrayCreate_v2);
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto &d = *pAllocateArray;
  return array_create(pHandle, d.Width, d.Height, 0, d.Format, d.NumChannels, 0);
}

LG_SIM_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray) {
  LG_SIM_ENTRY(cuArray3DCreate);
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto &d = *pAllocateArray;
  return array_create(pHandle, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags);
}

LG_SIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  LG_SIM_ENTRY(cuArray3DCreate_v2);
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto &d = *pAllocateArray;
  return array_create(pHandle, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags);
}

LG_SIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                              unsigned int numMipmapLevels) {
  LG_SIM_ENTRY(cuMipmappedArrayCreate);
  if (pHandle == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = lg_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels, desc->Flags,
                                numMipmapLevels);
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void *array = nullptr;
  CUresult status = driver().create_array(bytes, true, &array);
  if (status == CUDA_SUCCESS) *pHandle = static_cast<CUmipmappedArray>(array);
  return status;
}

LG_SIM_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
  LG_SIM_ENTRY(cuArrayDestroy);
  return driver().destroy_array(hArray, false);
}

LG_SIM_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  LG_SIM_ENTRY(cuMipmappedArrayDestroy);
  return driver().destroy_array(hMipmappedArray, true);
}

// IPC.
LG_SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  LG_SIM_ENTRY(cuIpcGetMemHandle);
  return driver().ipc_get_handle(pHandle, dptr);
}

LG_SIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  LG_SIM_ENTRY(cuIpcOpenMemHandle);
  return ipc_open(pdptr, handle, Flags);
}

LG_SIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  LG_SIM_ENTRY(cuIpcOpenMemHandle_v2);
  return ipc_open(pdptr, handle, Flags);
}

LG_SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  LG_SIM_ENTRY(cuIpcCloseMemHandle);
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return driver().release(dptr, {leaseguard::sim::MemoryKind::Ipc});
}

// Host registration.
LG_SIM_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  LG_SIM_ENTRY(cuMemHostRegister);
  return host_register(p, bytesize, Flags);
}

LG_SIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
  LG_SIM_ENTRY(cuMemHostRegister_v2);
  return host_register(p, bytesize, Flags);
}

LG_SIM_EXPORT CUresult cuMemHostUnregister(void *p) {
  LG_SIM_ENTRY(cuMemHostUnregister);
  return driver().unregister_host(p);
}

// External memory.
LG_SIM_EXPORT CUresult cuImportExternalMemory(CUexternalMemory *extMem_out,
                                              const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *memHandleDesc) {
  LG_SIM_ENTRY(cuImportExternalMemory);
  return driver().import_external(extMem_out, memHandleDesc);
}

LG_SIM_EXPORT CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr *devPtr, CUexternalMemory extMem,
                                                       const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *bufferDesc) {
  LG_SIM_ENTRY(cuExternalMemoryGetMappedBuffer);
  return driver().map_external_buffer(devPtr, extMem, bufferDesc);
}

LG_SIM_EXPORT CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  LG_SIM_ENTRY(cuDestroyExternalMemory);
  return driver().destroy_external(extMem);
}

LG_SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  LG_SIM_ENTRY(cuMemGetAddressRange_v2);
  uint64_t base = 0;
  size_t size = 0;
  CUresult status = driver().address_range(dptr, &base, &size);
  if (status != CUDA_SUCCESS) return status;
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = size;
  return CUDA_SUCCESS;
}

// Modules and launches. A module is a simulator module image (sim_kernels.h) or device code
// nvcc makes, loaded as a library (sim_libraries.h): its kernels and variables are the code's.
namespace {
leaseguard::sim::SimLibrary *as_library(CUmodule hmod) {
  auto *library = reinterpret_cast<leaseguard::sim::SimLibrary *>(hmod);
  return leaseguard::sim::library_valid(library) ? library : nullptr;
}

// A library's variable into the driver's two outputs, either of which may be null.
CUresult variable_of(leaseguard::sim::SimLibrary *library, const char *name, bool managed_only, CUdeviceptr *dptr,
                     size_t *bytes) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  size_t size = 0;
  const CUresult status = leaseguard::sim::library_variable(library, name, &address, &size, managed_only);
  if (status != CUDA_SUCCESS) return status;
  if (dptr != nullptr) *dptr = address;
  if (bytes != nullptr) *bytes = size;
  return CUDA_SUCCESS;
}

CUresult load_module(CUmodule *module, const void *image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (auto *loaded = leaseguard::sim::load_module(image); loaded != nullptr) {
    *module = reinterpret_cast<CUmodule>(loaded);
    return CUDA_SUCCESS;
  }
  return leaseguard::sim::load_library(image, reinterpret_cast<leaseguard::sim::SimLibrary **>(module));
}
}  // namespace

LG_SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  LG_SIM_ENTRY(cuModuleLoadData);
  return load_module(module, image);
}

// JIT options change nothing here: nothing is compiled.
LG_SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int, CUjit_option *, void **) {
  LG_SIM_ENTRY(cuModuleLoadDataEx);
  return load_module(module, image);
}

LG_SIM_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  LG_SIM_ENTRY(cuModuleUnload);
  if (leaseguard::sim::unload_library(reinterpret_cast<leaseguard::sim::SimLibrary *>(hmod))) return CUDA_SUCCESS;
  auto *module = reinterpret_cast<leaseguard::sim::SimModule *>(hmod);
  if (!leaseguard::sim::module_valid(module)) return CUDA_ERROR_INVALID_HANDLE;
  leaseguard::sim::unload_module(module);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  LG_SIM_ENTRY(cuModuleGetFunction);
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (auto *library = as_library(hmod); library != nullptr)
    return leaseguard::sim::library_kernel(library, name, reinterpret_cast<leaseguard::sim::LibraryKernel **>(hfunc));
  auto *module = reinterpret_cast<leaseguard::sim::SimModule *>(hmod);
  if (!leaseguard::sim::module_valid(module)) return CUDA_ERROR_INVALID_HANDLE;
  const auto *kernel = leaseguard::sim::find_kernel(module, name);
  if (kernel == nullptr) return CUDA_ERROR_NOT_FOUND;
  *hfunc = reinterpret_cast<CUfunction>(const_cast<leaseguard::sim::SimKernel *>(kernel));
  return CUDA_SUCCESS;
}

// A variable of a module loaded from device code (a simulator module declares none).
LG_SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
  LG_SIM_ENTRY(cuModuleGetGlobal_v2);
  auto *library = as_library(hmod);
  if (library == nullptr)
    return leaseguard::sim::module_valid(reinterpret_cast<leaseguard::sim::SimModule *>(hmod))
               ? CUDA_ERROR_NOT_FOUND
               : CUDA_ERROR_INVALID_HANDLE;
  return variable_of(library, name, false, dptr, bytes);
}

// JIT linking is not simulated: inputs are checked (device code, as nvcc makes it) and
// collected, and completing the link fails with CUDA_ERROR_NOT_SUPPORTED, said once on stderr.
namespace {
struct LinkState {
  size_t inputs = 0;
};
std::atomic<bool> g_said_link{false};
}  // namespace

LG_SIM_EXPORT CUresult cuLinkCreate_v2(unsigned int, CUjit_option *, void **, CUlinkState *stateOut) {
  LG_SIM_ENTRY(cuLinkCreate_v2);
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *stateOut = reinterpret_cast<CUlinkState>(new LinkState);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *,
                                        unsigned int, CUjit_option *, void **) {
  LG_SIM_ENTRY(cuLinkAddData_v2);
  if (state == nullptr || data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_JIT_INPUT_CUBIN && type != CU_JIT_INPUT_PTX && type != CU_JIT_INPUT_FATBINARY)
    return CUDA_ERROR_NOT_SUPPORTED;  // object files and libraries: nvcc's host-side formats
  leaseguard::sim::DeviceCode code;
  if (leaseguard::sim::read_device_code(data, code) != leaseguard::sim::DeviceCodeStatus::Read)
    return CUDA_ERROR_INVALID_IMAGE;
  ++reinterpret_cast<LinkState *>(state)->inputs;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
  LG_SIM_ENTRY(cuLinkComplete);
  if (state == nullptr || cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!g_said_link.exchange(true))
    std::fprintf(stderr,
                 "leaseguard-sim: JIT linking is not simulated: cuLinkComplete fails with "
                 "CUDA_ERROR_NOT_SUPPORTED\n");
  return CUDA_ERROR_NOT_SUPPORTED;
}

LG_SIM_EXPORT CUresult cuLinkDestroy(CUlinkState state) {
  LG_SIM_ENTRY(cuLinkDestroy);
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<LinkState *>(state);
  return CUDA_SUCCESS;
}

namespace {

CUresult launch(CUfunction f, unsigned gridDimX, unsigned gridDimY, unsigned gridDimZ, unsigned blockDimX,
                unsigned blockDimY, unsigned blockDimZ, unsigned sharedMemBytes, void **kernelParams, void **extra) {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (driver().current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  const auto *kernel = reinterpret_cast<const leaseguard::sim::SimKernel *>(f);
  if (!leaseguard::sim::kernel_valid(kernel)) {
    const leaseguard::sim::LibraryKernel *compiled = leaseguard::sim::as_library_kernel(f);
    if (compiled == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (compiled->stand_in == nullptr) {
      // Device code: run by the PTX interpreter (sim_ptx_launch.h), or refused saying why.
      const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ}, block[3] = {blockDimX, blockDimY, blockDimZ};
      return leaseguard::sim::launch_device_code(const_cast<leaseguard::sim::LibraryKernel &>(*compiled), grid, block,
                                                 sharedMemBytes, kernelParams, extra);
    }
    kernel = compiled->stand_in;
  }
  uint64_t threads = uint64_t{gridDimX} * gridDimY * gridDimZ * blockDimX * blockDimY * blockDimZ;
  if (threads == 0 || blockDimX * uint64_t{blockDimY} * blockDimZ > 1024) return CUDA_ERROR_INVALID_VALUE;
  leaseguard::sim::KernelLaunch launch;
  launch.threads = threads > UINT32_MAX ? UINT32_MAX : static_cast<unsigned>(threads);
  CUresult status = static_cast<CUresult>(
      leaseguard::sim::resolve_arguments(*kernel, kernelParams, extra, CU_LAUNCH_PARAM_BUFFER_POINTER,
                                         CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END, launch));
  if (status != CUDA_SUCCESS) return status;
  return static_cast<CUresult>(kernel->run(launch));
}

}  // namespace

LG_SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                      unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                      unsigned int sharedMemBytes, CUstream, void **kernelParams, void **extra) {
  LG_SIM_ENTRY(cuLaunchKernel);
  return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, kernelParams, extra);
}

LG_SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                           unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream,
                                           void **kernelParams, void **extra) {
  LG_SIM_ENTRY(cuLaunchKernel_ptsz);
  return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, kernelParams, extra);
}

// Launch attributes (clusters, priorities, ...) change nothing for a kernel run on the host.
LG_SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
  LG_SIM_ENTRY(cuLaunchKernelEx);
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                config->blockDimZ, config->sharedMemBytes, kernelParams, extra);
}

// ---- Libraries: what the CUDA runtime loads its fat binaries with (lazily, at a first launch) ----

LG_SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *, void **, unsigned int,
                                         CUlibraryOption *, void **, unsigned int) {
  LG_SIM_ENTRY(cuLibraryLoadData);
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return leaseguard::sim::load_library(code, reinterpret_cast<leaseguard::sim::SimLibrary **>(library));
}

LG_SIM_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  LG_SIM_ENTRY(cuLibraryUnload);
  return leaseguard::sim::unload_library(reinterpret_cast<leaseguard::sim::SimLibrary *>(library))
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_HANDLE;
}

// Only the kernels the library's code declares are found (CUDA_ERROR_NOT_FOUND otherwise).
LG_SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  LG_SIM_ENTRY(cuLibraryGetKernel);
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return leaseguard::sim::library_kernel(reinterpret_cast<leaseguard::sim::SimLibrary *>(library), name,
                                         reinterpret_cast<leaseguard::sim::LibraryKernel **>(pKernel));
}

// A `__device__` or `__constant__` variable: device memory of its size in the current
// context, holding its initial value. Either output may be null.
LG_SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
  LG_SIM_ENTRY(cuLibraryGetGlobal);
  return variable_of(reinterpret_cast<leaseguard::sim::SimLibrary *>(library), name, false, dptr, bytes);
}

// A `__managed__` variable: the same memory cuLibraryGetGlobal gives it. NOT_FOUND for others.
LG_SIM_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
  LG_SIM_ENTRY(cuLibraryGetManaged);
  return variable_of(reinterpret_cast<leaseguard::sim::SimLibrary *>(library), name, true, dptr, bytes);
}

// A function is its kernel: a launch accepts either handle, as on the driver.
LG_SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  LG_SIM_ENTRY(cuKernelGetFunction);
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (leaseguard::sim::as_library_kernel(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel) {
  LG_SIM_ENTRY(cuKernelGetLibrary);
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const leaseguard::sim::LibraryKernel *known = leaseguard::sim::as_library_kernel(kernel);
  if (known == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *pLib = reinterpret_cast<CUlibrary>(known->library);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
  LG_SIM_ENTRY(cuKernelGetName);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const leaseguard::sim::LibraryKernel *known = leaseguard::sim::as_library_kernel(kernel);
  if (known == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = known->name.c_str();
  return CUDA_SUCCESS;
}

namespace {

// What a kernel's attributes read as: a small kernel's, within the device's limits.
CUresult function_attribute(int *value, CUfunction_attribute attribute, const void *handle) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!leaseguard::sim::kernel_valid(static_cast<const leaseguard::sim::SimKernel *>(handle)) &&
      leaseguard::sim::as_library_kernel(handle) == nullptr)
    return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = 48 * 1024; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

}  // namespace

LG_SIM_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  LG_SIM_ENTRY(cuFuncGetAttribute);
  return function_attribute(pi, attrib, hfunc);
}

LG_SIM_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice) {
  LG_SIM_ENTRY(cuKernelGetAttribute);
  return function_attribute(pi, attrib, kernel);
}

// Settings a launch would honour on a GPU; the simulator accepts them and has nothing to apply.
LG_SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute, int) {
  LG_SIM_ENTRY(cuFuncSetAttribute);
  int ignored = 0;
  return function_attribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, hfunc);
}

LG_SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache) {
  LG_SIM_ENTRY(cuFuncSetCacheConfig);
  int ignored = 0;
  return function_attribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, hfunc);
}

LG_SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute, int, CUkernel kernel, CUdevice) {
  LG_SIM_ENTRY(cuKernelSetAttribute);
  int ignored = 0;
  return function_attribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel);
}

// For tests: how many times entry point `name` was called in this process.
LG_SIM_EXPORT uint64_t leaseguard_sim_call_count(const char *name) {
  return name != nullptr ? leaseguard::sim::call_count(name) : 0;
}

// For tests: adds faults in the LEASEGUARD_SIM_FAULTS syntax, from now on.
LG_SIM_EXPORT void leaseguard_sim_add_faults(const char *spec) { leaseguard::sim::add_faults(spec); }

// For tests: LEASEGUARD_SIM_FORKED_CHILD from now on (nonzero: "inherits").
LG_SIM_EXPORT void leaseguard_sim_forked_children_inherit(int inherit) {
  leaseguard::sim::SimDriver::instance().set_forked_child_inherits(inherit != 0);
}

// ---- Occupancy: answered from the simulated device's per-SM limits (its attributes) ----

namespace {
constexpr int kThreadsPerMultiprocessor = 2048;
constexpr int kBlocksPerMultiprocessor = 32;
constexpr size_t kSharedPerMultiprocessor = 233472;
constexpr size_t kSharedPerBlockOptIn = 232448;
constexpr size_t kReservedSharedPerBlock = 1024;

CUresult max_active_blocks(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
  if (numBlocks == nullptr || blockSize <= 0 || blockSize > 1024) return CUDA_ERROR_INVALID_VALUE;
  int ignored = 0;
  if (CUresult status = cuFuncGetAttribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, func); status != CUDA_SUCCESS)
    return status;
  int blocks = std::min(kBlocksPerMultiprocessor, kThreadsPerMultiprocessor / blockSize);
  const size_t per_block = dynamicSMemSize + kReservedSharedPerBlock;
  blocks = std::min(blocks, static_cast<int>(kSharedPerMultiprocessor / per_block));
  *numBlocks = blocks;
  return CUDA_SUCCESS;
}
}  // namespace

LG_SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                            int blockSize, size_t dynamicSMemSize,
                                                                            unsigned int) {
  LG_SIM_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags);
  return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize);
}

LG_SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                                   size_t dynamicSMemSize) {
  LG_SIM_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor);
  return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize);
}

LG_SIM_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                               int blockSize) {
  LG_SIM_ENTRY(cuOccupancyAvailableDynamicSMemPerBlock);
  if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  int ignored = 0;
  if (CUresult status = cuFuncGetAttribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, func); status != CUDA_SUCCESS)
    return status;
  const size_t per_block = kSharedPerMultiprocessor / static_cast<size_t>(numBlocks);
  *dynamicSmemSize =
      per_block > kReservedSharedPerBlock ? std::min(per_block - kReservedSharedPerBlock, kSharedPerBlockOptIn) : 0;
  return CUDA_SUCCESS;
}

namespace {
// The cluster size a launch configuration asks for (1 without the attribute).
unsigned cluster_size(const CUlaunchConfig &config) {
  for (unsigned i = 0; config.attrs != nullptr && i < config.numAttrs; ++i) {
    const CUlaunchAttribute &attribute = config.attrs[i];
    if (attribute.id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    const auto &dim = attribute.value.clusterDim;
    return std::max(1u, dim.x) * std::max(1u, dim.y) * std::max(1u, dim.z);
  }
  return 1;
}
constexpr int kMultiprocessors = 132;
constexpr int kPortableClusterSize = 8;
}  // namespace

// Clusters of up to 8 blocks (the portable size), one block on each multiprocessor: how many fit.
LG_SIM_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config) {
  LG_SIM_ENTRY(cuOccupancyMaxActiveClusters);
  if (numClusters == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int ignored = 0;
  if (CUresult status = cuFuncGetAttribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, func); status != CUDA_SUCCESS)
    return status;
  const unsigned size = cluster_size(*config);
  // Past the portable size (a kernel may opt in to 16 on a GPU), none fit: 0, as a GPU answers.
  *numClusters = size > static_cast<unsigned>(kPortableClusterSize) ? 0 : kMultiprocessors / static_cast<int>(size);
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
                                                          const CUlaunchConfig *config) {
  LG_SIM_ENTRY(cuOccupancyMaxPotentialClusterSize);
  if (clusterSize == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int ignored = 0;
  if (CUresult status = cuFuncGetAttribute(&ignored, CU_FUNC_ATTRIBUTE_NUM_REGS, func); status != CUDA_SUCCESS)
    return status;
  *clusterSize = kPortableClusterSize;
  return CUDA_SUCCESS;
}
