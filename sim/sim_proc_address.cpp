// cuGetProcAddress and cuGetProcAddress_v2 of the simulated driver.
//
// The driver answers a (symbol, cudaVersion, flags) query with one exported variant: the
// newest variant introduced at or before cudaVersion, and with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread-stream (_ptds/_ptsz) variant
// where one exists. The table lists every variant the real driver has for each family the
// simulator knows (versions as cudaTypedefs.h numbers them), including variants the
// simulator does not implement: those resolve to NULL with success, as the driver does for a
// symbol it lacks, instead of silently falling back to an older variant.
// tests/victims/proc_address_replay.c checks this against
// shared/data/cudart-13.0-driver-lookups.tsv, line by line.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>

#include "lg_cuda.h"
#include "sim_entry.h"

namespace {

struct Variant {
  const char *symbol;    // what callers ask for
  const char *exported;  // the driver's exported name for this variant
  int since;             // first cudaVersion that resolves to it
  bool per_thread;       // the per-thread default stream variant
  void *function;        // the simulator's implementation, or NULL
};

// The profiler's entry points are cudaProfiler.h's, not cuda.h's (sim_cuda_exports.cpp).
extern "C" CUresult cuProfilerStart(void);
extern "C" CUresult cuProfilerStop(void);

#define FN(name) reinterpret_cast<void *>(&::name)

const Variant kVariants[] = {
    {"cuInit", "cuInit", 2000, false, FN(cuInit)},
    {"cuDriverGetVersion", "cuDriverGetVersion", 2020, false, FN(cuDriverGetVersion)},
    {"cuDeviceGet", "cuDeviceGet", 2000, false, FN(cuDeviceGet)},
    {"cuDeviceGetCount", "cuDeviceGetCount", 2000, false, FN(cuDeviceGetCount)},
    {"cuDeviceGetName", "cuDeviceGetName", 2000, false, FN(cuDeviceGetName)},
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000, false, FN(cuDeviceTotalMem)},
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020, false, FN(cuDeviceTotalMem_v2)},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000, false, FN(cuDeviceGetAttribute)},
    {"cuCtxCreate", "cuCtxCreate", 2000, false, FN(cuCtxCreate)},
    {"cuCtxCreate", "cuCtxCreate_v2", 3020, false, FN(cuCtxCreate_v2)},
    {"cuCtxCreate", "cuCtxCreate_v3", 11040, false, FN(cuCtxCreate_v3)},
    {"cuCtxCreate", "cuCtxCreate_v4", 12050, false, FN(cuCtxCreate_v4)},
    {"cuCtxDestroy", "cuCtxDestroy", 2000, false, FN(cuCtxDestroy)},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000, false, FN(cuCtxDestroy_v2)},
    {"cuCtxSetCurrent", "cuCtxSetCurrent", 4000, false, FN(cuCtxSetCurrent)},
    {"cuCtxGetCurrent", "cuCtxGetCurrent", 4000, false, FN(cuCtxGetCurrent)},
    {"cuCtxGetDevice", "cuCtxGetDevice", 2000, false, FN(cuCtxGetDevice)},
    {"cuCtxGetDevice", "cuCtxGetDevice_v2", 13000, false, FN(cuCtxGetDevice_v2)},
    {"cuDeviceGetUuid", "cuDeviceGetUuid", 9020, false, FN(cuDeviceGetUuid)},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040, false, FN(cuDeviceGetUuid_v2)},
    {"cuDeviceGetPCIBusId", "cuDeviceGetPCIBusId", 4010, false, FN(cuDeviceGetPCIBusId)},
    {"cuDeviceGetByPCIBusId", "cuDeviceGetByPCIBusId", 4010, false, FN(cuDeviceGetByPCIBusId)},
    {"cuDeviceCanAccessPeer", "cuDeviceCanAccessPeer", 4000, false, FN(cuDeviceCanAccessPeer)},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags", 7000, false, nullptr},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000, false, FN(cuDevicePrimaryCtxSetFlags_v2)},
    {"cuCtxGetFlags", "cuCtxGetFlags", 7000, false, FN(cuCtxGetFlags)},
    {"cuCtxGetApiVersion", "cuCtxGetApiVersion", 3020, false, FN(cuCtxGetApiVersion)},
    {"cuCtxGetLimit", "cuCtxGetLimit", 3010, false, FN(cuCtxGetLimit)},
    {"cuCtxSetLimit", "cuCtxSetLimit", 3010, false, FN(cuCtxSetLimit)},
    {"cuCtxGetCacheConfig", "cuCtxGetCacheConfig", 3020, false, FN(cuCtxGetCacheConfig)},
    {"cuCtxSetCacheConfig", "cuCtxSetCacheConfig", 3020, false, FN(cuCtxSetCacheConfig)},
    {"cuCtxGetSharedMemConfig", "cuCtxGetSharedMemConfig", 4020, false, FN(cuCtxGetSharedMemConfig)},
    {"cuCtxSetSharedMemConfig", "cuCtxSetSharedMemConfig", 4020, false, FN(cuCtxSetSharedMemConfig)},
    {"cuCtxGetStreamPriorityRange", "cuCtxGetStreamPriorityRange", 5050, false, FN(cuCtxGetStreamPriorityRange)},
    {"cuModuleGetLoadingMode", "cuModuleGetLoadingMode", 11070, false, FN(cuModuleGetLoadingMode)},
    {"cuCtxGetId", "cuCtxGetId", 12000, false, FN(cuCtxGetId)},
    {"cuCtxPushCurrent", "cuCtxPushCurrent", 2000, false, FN(cuCtxPushCurrent)},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000, false, FN(cuCtxPushCurrent_v2)},
    {"cuCtxPopCurrent", "cuCtxPopCurrent", 2000, false, FN(cuCtxPopCurrent)},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000, false, FN(cuCtxPopCurrent_v2)},
    {"cuCtxSynchronize", "cuCtxSynchronize", 2000, false, FN(cuCtxSynchronize)},
    {"cuProfilerStart", "cuProfilerStart", 4000, false, FN(cuProfilerStart)},
    {"cuProfilerStop", "cuProfilerStop", 4000, false, FN(cuProfilerStop)},
    {"cuCtxSynchronize", "cuCtxSynchronize_v2", 13000, false, FN(cuCtxSynchronize_v2)},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, false, FN(cuDevicePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 7000, false, FN(cuDevicePrimaryCtxRelease)},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000, false, FN(cuDevicePrimaryCtxRelease_v2)},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset", 7000, false, FN(cuDevicePrimaryCtxReset)},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000, false, FN(cuDevicePrimaryCtxReset_v2)},
    {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 7000, false, FN(cuDevicePrimaryCtxGetState)},
    {"cuMemAlloc", "cuMemAlloc", 2000, false, FN(cuMemAlloc)},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020, false, FN(cuMemAlloc_v2)},
    {"cuMemFree", "cuMemFree", 2000, false, FN(cuMemFree)},
    {"cuMemFree", "cuMemFree_v2", 3020, false, FN(cuMemFree_v2)},
    {"cuMemAllocPitch", "cuMemAllocPitch", 2000, false, FN(cuMemAllocPitch)},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020, false, FN(cuMemAllocPitch_v2)},
    {"cuMemAllocManaged", "cuMemAllocManaged", 6000, false, FN(cuMemAllocManaged)},
    {"cuMemAllocHost", "cuMemAllocHost", 2000, false, FN(cuMemAllocHost)},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020, false, FN(cuMemAllocHost_v2)},
    {"cuMemHostAlloc", "cuMemHostAlloc", 2020, false, FN(cuMemHostAlloc)},
    {"cuMemFreeHost", "cuMemFreeHost", 2000, false, FN(cuMemFreeHost)},
    {"cuMemAllocAsync", "cuMemAllocAsync", 11020, false, FN(cuMemAllocAsync)},
    {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", 11020, true, FN(cuMemAllocAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, false, FN(cuMemAllocFromPoolAsync)},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", 11020, true, FN(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemFreeAsync", "cuMemFreeAsync", 11020, false, FN(cuMemFreeAsync)},
    {"cuMemFreeAsync", "cuMemFreeAsync_ptsz", 11020, true, FN(cuMemFreeAsync_ptsz)},
    {"cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020, false, FN(cuDeviceGetDefaultMemPool)},
    {"cuMemGetDefaultMemPool", "cuMemGetDefaultMemPool", 13000, false, FN(cuMemGetDefaultMemPool)},
    {"cuMemPoolCreate", "cuMemPoolCreate", 11020, false, FN(cuMemPoolCreate)},
    {"cuMemPoolDestroy", "cuMemPoolDestroy", 11020, false, FN(cuMemPoolDestroy)},
    {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020, false, FN(cuMemPoolTrimTo)},
    {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute", 11020, false, FN(cuMemPoolGetAttribute)},
    {"cuMemCreate", "cuMemCreate", 10020, false, FN(cuMemCreate)},
    {"cuMemRelease", "cuMemRelease", 10020, false, FN(cuMemRelease)},
    {"cuMemAddressReserve", "cuMemAddressReserve", 10020, false, FN(cuMemAddressReserve)},
    {"cuMemAddressFree", "cuMemAddressFree", 10020, false, FN(cuMemAddressFree)},
    {"cuMemMap", "cuMemMap", 10020, false, FN(cuMemMap)},
    {"cuMemUnmap", "cuMemUnmap", 10020, false, FN(cuMemUnmap)},
    {"cuMemSetAccess", "cuMemSetAccess", 10020, false, FN(cuMemSetAccess)},
    {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 10020, false, FN(cuMemGetAllocationGranularity)},
    {"cuMemRetainAllocationHandle", "cuMemRetainAllocationHandle", 11000, false, FN(cuMemRetainAllocationHandle)},
    {"cuMemExportToShareableHandle", "cuMemExportToShareableHandle", 10020, false, FN(cuMemExportToShareableHandle)},
    {"cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle", 10020, false,
     FN(cuMemImportFromShareableHandle)},
    {"cuArrayCreate", "cuArrayCreate", 2000, false, FN(cuArrayCreate)},
    {"cuArrayCreate", "cuArrayCreate_v2", 3020, false, FN(cuArrayCreate_v2)},
    {"cuArray3DCreate", "cuArray3DCreate", 2000, false, FN(cuArray3DCreate)},
    {"cuArray3DCreate", "cuArray3DCreate_v2", 3020, false, FN(cuArray3DCreate_v2)},
    {"cuMipmappedArrayCreate", "cuMipmappedArrayCreate", 5000, false, FN(cuMipmappedArrayCreate)},
    {"cuArrayDestroy", "cuArrayDestroy", 2000, false, FN(cuArrayDestroy)},
    {"cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy", 5000, false, FN(cuMipmappedArrayDestroy)},
    {"cuIpcGetMemHandle", "cuIpcGetMemHandle", 4010, false, FN(cuIpcGetMemHandle)},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle", 4010, false, FN(cuIpcOpenMemHandle)},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2", 11000, false, FN(cuIpcOpenMemHandle_v2)},
    {"cuIpcCloseMemHandle", "cuIpcCloseMemHandle", 4010, false, FN(cuIpcCloseMemHandle)},
    {"cuMemHostRegister", "cuMemHostRegister", 4000, false, FN(cuMemHostRegister)},
    {"cuMemHostRegister", "cuMemHostRegister_v2", 6050, false, FN(cuMemHostRegister_v2)},
    {"cuMemHostUnregister", "cuMemHostUnregister", 4000, false, FN(cuMemHostUnregister)},
    {"cuImportExternalMemory", "cuImportExternalMemory", 10000, false, FN(cuImportExternalMemory)},
    {"cuExternalMemoryGetMappedBuffer", "cuExternalMemoryGetMappedBuffer", 10000, false,
     FN(cuExternalMemoryGetMappedBuffer)},
    {"cuDestroyExternalMemory", "cuDestroyExternalMemory", 10000, false, FN(cuDestroyExternalMemory)},
    {"cuMemcpyHtoD", "cuMemcpyHtoD", 2000, false, nullptr},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020, false, FN(cuMemcpyHtoD_v2)},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2_ptds", 7000, true, FN(cuMemcpyHtoD_v2_ptds)},
    {"cuMemcpyDtoH", "cuMemcpyDtoH", 2000, false, nullptr},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020, false, FN(cuMemcpyDtoH_v2)},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2_ptds", 7000, true, FN(cuMemcpyDtoH_v2_ptds)},
    {"cuMemcpyDtoD", "cuMemcpyDtoD", 2000, false, nullptr},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2", 3020, false, FN(cuMemcpyDtoD_v2)},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2_ptds", 7000, true, FN(cuMemcpyDtoD_v2_ptds)},
    {"cuMemsetD8", "cuMemsetD8", 2000, false, nullptr},
    {"cuMemsetD8", "cuMemsetD8_v2", 3020, false, FN(cuMemsetD8_v2)},
    {"cuMemsetD8", "cuMemsetD8_v2_ptds", 7000, true, FN(cuMemsetD8_v2_ptds)},
    {"cuMemsetD32", "cuMemsetD32", 2000, false, nullptr},
    {"cuMemsetD32", "cuMemsetD32_v2", 3020, false, FN(cuMemsetD32_v2)},
    {"cuMemsetD32", "cuMemsetD32_v2_ptds", 7000, true, FN(cuMemsetD32_v2_ptds)},
    {"cuMemGetInfo", "cuMemGetInfo", 2000, false, nullptr},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020, false, FN(cuMemGetInfo_v2)},
    {"cuModuleLoadData", "cuModuleLoadData", 2000, false, FN(cuModuleLoadData)},
    {"cuModuleUnload", "cuModuleUnload", 2000, false, FN(cuModuleUnload)},
    {"cuModuleGetFunction", "cuModuleGetFunction", 2000, false, FN(cuModuleGetFunction)},
    {"cuLaunchKernel", "cuLaunchKernel", 4000, false, FN(cuLaunchKernel)},
    {"cuLaunchKernel", "cuLaunchKernel_ptsz", 7000, true, FN(cuLaunchKernel_ptsz)},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, false,
     FN(cuOccupancyMaxActiveBlocksPerMultiprocessor)},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
     7000, false, FN(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)},
    {"cuOccupancyAvailableDynamicSMemPerBlock", "cuOccupancyAvailableDynamicSMemPerBlock", 10020, false,
     FN(cuOccupancyAvailableDynamicSMemPerBlock)},
    {"cuOccupancyMaxActiveClusters", "cuOccupancyMaxActiveClusters", 11070, false, FN(cuOccupancyMaxActiveClusters)},
    {"cuOccupancyMaxPotentialClusterSize", "cuOccupancyMaxPotentialClusterSize", 11070, false,
     FN(cuOccupancyMaxPotentialClusterSize)},
    {"cuLibraryLoadData", "cuLibraryLoadData", 12000, false, FN(cuLibraryLoadData)},
    {"cuLibraryUnload", "cuLibraryUnload", 12000, false, FN(cuLibraryUnload)},
    {"cuLibraryGetKernel", "cuLibraryGetKernel", 12000, false, FN(cuLibraryGetKernel)},
    {"cuLibraryGetGlobal", "cuLibraryGetGlobal", 12000, false, FN(cuLibraryGetGlobal)},
    {"cuLibraryGetManaged", "cuLibraryGetManaged", 12000, false, FN(cuLibraryGetManaged)},
    {"cuKernelGetLibrary", "cuKernelGetLibrary", 12050, false, FN(cuKernelGetLibrary)},
    {"cuModuleLoadDataEx", "cuModuleLoadDataEx", 2010, false, FN(cuModuleLoadDataEx)},
    {"cuModuleGetGlobal", "cuModuleGetGlobal", 2000, false, nullptr},
    {"cuModuleGetGlobal", "cuModuleGetGlobal_v2", 3020, false, FN(cuModuleGetGlobal_v2)},
    {"cuLaunchKernelEx", "cuLaunchKernelEx", 11060, false, FN(cuLaunchKernelEx)},
    {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", 11060, true, nullptr},
    {"cuFuncSetCacheConfig", "cuFuncSetCacheConfig", 3000, false, FN(cuFuncSetCacheConfig)},
    {"cuLinkCreate", "cuLinkCreate", 5050, false, nullptr},
    {"cuLinkCreate", "cuLinkCreate_v2", 6050, false, FN(cuLinkCreate_v2)},
    {"cuLinkAddData", "cuLinkAddData", 5050, false, nullptr},
    {"cuLinkAddData", "cuLinkAddData_v2", 6050, false, FN(cuLinkAddData_v2)},
    {"cuLinkComplete", "cuLinkComplete", 5050, false, FN(cuLinkComplete)},
    {"cuLinkDestroy", "cuLinkDestroy", 5050, false, FN(cuLinkDestroy)},
    {"cuStreamWaitValue32", "cuStreamWaitValue32", 8000, false, FN(cuStreamWaitValue32)},
    {"cuStreamWaitValue32", "cuStreamWaitValue32_ptsz", 8000, true, FN(cuStreamWaitValue32_ptsz)},
    {"cuStreamWaitValue32", "cuStreamWaitValue32_v2", 11070, false, nullptr},
    {"cuStreamWaitValue32", "cuStreamWaitValue32_v2_ptsz", 11070, true, nullptr},
    {"cuStreamBatchMemOp", "cuStreamBatchMemOp", 8000, false, FN(cuStreamBatchMemOp)},
    {"cuStreamBatchMemOp", "cuStreamBatchMemOp_ptsz", 8000, true, FN(cuStreamBatchMemOp_ptsz)},
    {"cuStreamBatchMemOp", "cuStreamBatchMemOp_v2", 11070, false, nullptr},
    {"cuStreamBatchMemOp", "cuStreamBatchMemOp_v2_ptsz", 11070, true, nullptr},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync", 8000, false, FN(cuMemPrefetchAsync)},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_ptsz", 8000, true, FN(cuMemPrefetchAsync_ptsz)},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_v2", 12020, false, nullptr},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_v2_ptsz", 12020, true, nullptr},
    {"cuStreamBeginCapture", "cuStreamBeginCapture", 10000, false, nullptr},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010, false, FN(cuStreamBeginCapture_v2)},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2_ptsz", 10010, true, FN(cuStreamBeginCapture_v2_ptsz)},
    {"cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", 10010, false,
     FN(cuThreadExchangeStreamCaptureMode)},
    {"cuStreamEndCapture", "cuStreamEndCapture", 10000, false, FN(cuStreamEndCapture)},
    {"cuStreamEndCapture", "cuStreamEndCapture_ptsz", 10000, true, FN(cuStreamEndCapture_ptsz)},
    {"cuStreamIsCapturing", "cuStreamIsCapturing", 10000, false, FN(cuStreamIsCapturing)},
    {"cuStreamIsCapturing", "cuStreamIsCapturing_ptsz", 10000, true, FN(cuStreamIsCapturing_ptsz)},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo", 10010, false, nullptr},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v2", 11030, false, FN(cuStreamGetCaptureInfo_v2)},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v2_ptsz", 11030, true, FN(cuStreamGetCaptureInfo_v2_ptsz)},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3", 12030, false, nullptr},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3_ptsz", 12030, true, nullptr},
    {"cuGraphInstantiate", "cuGraphInstantiate", 10000, false, FN(cuGraphInstantiate)},
    {"cuGraphInstantiate", "cuGraphInstantiate_v2", 11000, false, nullptr},
    {"cuGraphLaunch", "cuGraphLaunch", 10000, false, FN(cuGraphLaunch)},
    {"cuGraphLaunch", "cuGraphLaunch_ptsz", 10000, true, FN(cuGraphLaunch_ptsz)},
    {"cuGraphExecDestroy", "cuGraphExecDestroy", 10000, false, FN(cuGraphExecDestroy)},
    {"cuGraphDestroy", "cuGraphDestroy", 10000, false, FN(cuGraphDestroy)},
    {"cuGraphGetNodes", "cuGraphGetNodes", 10000, false, FN(cuGraphGetNodes)},
    {"cuGraphNodeGetType", "cuGraphNodeGetType", 10000, false, FN(cuGraphNodeGetType)},
    {"cuGraphKernelNodeGetParams", "cuGraphKernelNodeGetParams", 10000, false, FN(cuGraphKernelNodeGetParams)},
    {"cuGraphKernelNodeGetParams", "cuGraphKernelNodeGetParams_v2", 12000, false, nullptr},
    {"cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams", 10010, false,
     FN(cuGraphExecKernelNodeSetParams)},
    {"cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams_v2", 12000, false, nullptr},
    {"cuCtxEnablePeerAccess", "cuCtxEnablePeerAccess", 4000, false, FN(cuCtxEnablePeerAccess)},
    {"cuCtxDisablePeerAccess", "cuCtxDisablePeerAccess", 4000, false, FN(cuCtxDisablePeerAccess)},
    {"cuKernelGetFunction", "cuKernelGetFunction", 12000, false, FN(cuKernelGetFunction)},
    {"cuKernelGetName", "cuKernelGetName", 12030, false, FN(cuKernelGetName)},
    {"cuFuncGetAttribute", "cuFuncGetAttribute", 2020, false, FN(cuFuncGetAttribute)},
    {"cuKernelGetAttribute", "cuKernelGetAttribute", 12000, false, FN(cuKernelGetAttribute)},
    {"cuFuncSetAttribute", "cuFuncSetAttribute", 9000, false, FN(cuFuncSetAttribute)},
    {"cuKernelSetAttribute", "cuKernelSetAttribute", 12000, false, FN(cuKernelSetAttribute)},
    {"cuMemGetAddressRange", "cuMemGetAddressRange", 2000, false, nullptr},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020, false, FN(cuMemGetAddressRange_v2)},
    {"cuStreamCreate", "cuStreamCreate", 2000, false, FN(cuStreamCreate)},
    {"cuStreamDestroy", "cuStreamDestroy", 2000, false, FN(cuStreamDestroy)},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000, false, FN(cuStreamDestroy_v2)},
    {"cuStreamSynchronize", "cuStreamSynchronize", 2000, false, FN(cuStreamSynchronize)},
    {"cuStreamSynchronize", "cuStreamSynchronize_ptsz", 7000, true, FN(cuStreamSynchronize_ptsz)},
    {"cuMemcpy", "cuMemcpy", 4000, false, FN(cuMemcpy)},
    {"cuMemcpy", "cuMemcpy_ptds", 7000, true, FN(cuMemcpy_ptds)},
    {"cuMemcpyAsync", "cuMemcpyAsync", 4000, false, FN(cuMemcpyAsync)},
    {"cuMemcpyAsync", "cuMemcpyAsync_ptsz", 7000, true, FN(cuMemcpyAsync_ptsz)},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync", 2000, false, nullptr},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", 3020, false, FN(cuMemcpyHtoDAsync_v2)},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2_ptsz", 7000, true, FN(cuMemcpyHtoDAsync_v2_ptsz)},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync", 2000, false, nullptr},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", 3020, false, FN(cuMemcpyDtoHAsync_v2)},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2_ptsz", 7000, true, FN(cuMemcpyDtoHAsync_v2_ptsz)},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync", 2000, false, nullptr},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", 3020, false, FN(cuMemcpyDtoDAsync_v2)},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2_ptsz", 7000, true, FN(cuMemcpyDtoDAsync_v2_ptsz)},
    {"cuMemsetD8Async", "cuMemsetD8Async", 3020, false, FN(cuMemsetD8Async)},
    {"cuMemsetD8Async", "cuMemsetD8Async_ptsz", 7000, true, FN(cuMemsetD8Async_ptsz)},
    {"cuMemsetD16Async", "cuMemsetD16Async", 3020, false, FN(cuMemsetD16Async)},
    {"cuMemsetD16Async", "cuMemsetD16Async_ptsz", 7000, true, FN(cuMemsetD16Async_ptsz)},
    {"cuMemsetD32Async", "cuMemsetD32Async", 3020, false, FN(cuMemsetD32Async)},
    {"cuMemsetD32Async", "cuMemsetD32Async_ptsz", 7000, true, FN(cuMemsetD32Async_ptsz)},
    {"cuMemsetD16", "cuMemsetD16", 2000, false, nullptr},
    {"cuMemsetD16", "cuMemsetD16_v2", 3020, false, FN(cuMemsetD16_v2)},
    {"cuMemsetD16", "cuMemsetD16_v2_ptds", 7000, true, nullptr},
    {"cuStreamCreateWithPriority", "cuStreamCreateWithPriority", 5050, false, FN(cuStreamCreateWithPriority)},
    {"cuStreamQuery", "cuStreamQuery", 2000, false, FN(cuStreamQuery)},
    {"cuStreamQuery", "cuStreamQuery_ptsz", 7000, true, FN(cuStreamQuery_ptsz)},
    {"cuStreamWaitEvent", "cuStreamWaitEvent", 3020, false, FN(cuStreamWaitEvent)},
    {"cuStreamWaitEvent", "cuStreamWaitEvent_ptsz", 7000, true, FN(cuStreamWaitEvent_ptsz)},
    {"cuStreamGetFlags", "cuStreamGetFlags", 5050, false, FN(cuStreamGetFlags)},
    {"cuStreamGetFlags", "cuStreamGetFlags_ptsz", 7000, true, FN(cuStreamGetFlags_ptsz)},
    {"cuStreamGetPriority", "cuStreamGetPriority", 5050, false, FN(cuStreamGetPriority)},
    {"cuStreamGetPriority", "cuStreamGetPriority_ptsz", 7000, true, FN(cuStreamGetPriority_ptsz)},
    {"cuStreamGetId", "cuStreamGetId", 12000, false, FN(cuStreamGetId)},
    {"cuStreamGetId", "cuStreamGetId_ptsz", 12000, true, FN(cuStreamGetId_ptsz)},
    {"cuLaunchHostFunc", "cuLaunchHostFunc", 10000, false, FN(cuLaunchHostFunc)},
    {"cuLaunchHostFunc", "cuLaunchHostFunc_ptsz", 10000, true, FN(cuLaunchHostFunc_ptsz)},
    {"cuStreamAddCallback", "cuStreamAddCallback", 5000, false, FN(cuStreamAddCallback)},
    {"cuStreamAddCallback", "cuStreamAddCallback_ptsz", 7000, true, FN(cuStreamAddCallback_ptsz)},
    {"cuStreamGetCtx", "cuStreamGetCtx", 9020, false, FN(cuStreamGetCtx)},
    {"cuEventCreate", "cuEventCreate", 2000, false, FN(cuEventCreate)},
    {"cuEventDestroy", "cuEventDestroy", 2000, false, nullptr},
    {"cuEventDestroy", "cuEventDestroy_v2", 4000, false, FN(cuEventDestroy_v2)},
    {"cuEventRecord", "cuEventRecord", 2000, false, FN(cuEventRecord)},
    {"cuEventRecord", "cuEventRecord_ptsz", 7000, true, FN(cuEventRecord_ptsz)},
    {"cuEventRecordWithFlags", "cuEventRecordWithFlags", 11010, false, FN(cuEventRecordWithFlags)},
    {"cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz", 11010, true, FN(cuEventRecordWithFlags_ptsz)},
    {"cuEventQuery", "cuEventQuery", 2000, false, FN(cuEventQuery)},
    {"cuEventSynchronize", "cuEventSynchronize", 2000, false, FN(cuEventSynchronize)},
    {"cuEventElapsedTime", "cuEventElapsedTime", 2000, false, FN(cuEventElapsedTime)},
    {"cuEventElapsedTime", "cuEventElapsedTime_v2", 12080, false, FN(cuEventElapsedTime_v2)},
    {"cuMemcpy2D", "cuMemcpy2D", 2000, false, nullptr},
    {"cuMemcpy2D", "cuMemcpy2D_v2", 3020, false, FN(cuMemcpy2D_v2)},
    {"cuMemcpy2D", "cuMemcpy2D_v2_ptds", 7000, true, FN(cuMemcpy2D_v2_ptds)},
    {"cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned", 2000, false, nullptr},
    {"cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2", 3020, false, FN(cuMemcpy2DUnaligned_v2)},
    {"cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2_ptds", 7000, true, FN(cuMemcpy2DUnaligned_v2_ptds)},
    {"cuMemcpy2DAsync", "cuMemcpy2DAsync", 2000, false, nullptr},
    {"cuMemcpy2DAsync", "cuMemcpy2DAsync_v2", 3020, false, FN(cuMemcpy2DAsync_v2)},
    {"cuMemcpy2DAsync", "cuMemcpy2DAsync_v2_ptsz", 7000, true, FN(cuMemcpy2DAsync_v2_ptsz)},
    {"cuMemcpy3D", "cuMemcpy3D", 2000, false, nullptr},
    {"cuMemcpy3D", "cuMemcpy3D_v2", 3020, false, FN(cuMemcpy3D_v2)},
    {"cuMemcpy3D", "cuMemcpy3D_v2_ptds", 7000, true, FN(cuMemcpy3D_v2_ptds)},
    {"cuMemcpy3DAsync", "cuMemcpy3DAsync", 2000, false, nullptr},
    {"cuMemcpy3DAsync", "cuMemcpy3DAsync_v2", 3020, false, FN(cuMemcpy3DAsync_v2)},
    {"cuMemcpy3DAsync", "cuMemcpy3DAsync_v2_ptsz", 7000, true, FN(cuMemcpy3DAsync_v2_ptsz)},
    {"cuPointerGetAttribute", "cuPointerGetAttribute", 4000, false, FN(cuPointerGetAttribute)},
    {"cuPointerGetAttributes", "cuPointerGetAttributes", 7000, false, FN(cuPointerGetAttributes)},
    {"cuGetErrorName", "cuGetErrorName", 6000, false, FN(cuGetErrorName)},
    {"cuGetErrorString", "cuGetErrorString", 6000, false, FN(cuGetErrorString)},
    {"cuGetExportTable", "cuGetExportTable", 3000, false, FN(cuGetExportTable)},
    {"cuGetProcAddress", "cuGetProcAddress", 11030, false, FN(cuGetProcAddress)},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000, false, FN(cuGetProcAddress_v2)},
};

#undef FN

// Picks the variant for (symbol, version, flags). Returns false if the symbol is unknown.
bool resolve(const char *symbol, int version, cuuint64_t flags, void **function,
             CUdriverProcAddressQueryResult *status) {
  const bool want_per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const Variant *best_default = nullptr;
  const Variant *best_per_thread = nullptr;
  bool known = false;
  for (const Variant &variant : kVariants) {
    if (std::strcmp(variant.symbol, symbol) != 0) continue;
    known = true;
    if (variant.since > version) continue;
    const Variant *&best = variant.per_thread ? best_per_thread : best_default;
    if (best == nullptr || variant.since >= best->since) best = &variant;
  }
  const Variant *chosen = want_per_thread && best_per_thread != nullptr ? best_per_thread : best_default;
  if (!known) {
    *function = nullptr;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;  // a symbol the simulator lacks: success with NULL
    return true;
  }
  if (chosen == nullptr) {
    *function = nullptr;
    *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return false;
  }
  *function = chosen->function;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return true;
}

// Under LEASEGUARD_SIM_PROBE, a lookup the simulator answers with NULL gets a stub instead
// that prints the symbol's name when it is called, so that a run shows which of the missing
// entry points a runtime would call, and which NULLs it refuses to start without.
constexpr size_t kProbeStubs = 512;
char g_probe_stub_names[kProbeStubs][64];
std::atomic<size_t> g_probe_stubs_used{0};

template <size_t N>
CUresult probe_stub() {
  std::fprintf(stderr, "leaseguard-sim: called %s, which the simulator does not implement\n", g_probe_stub_names[N]);
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <size_t... N>
constexpr std::array<void *, kProbeStubs> make_probe_stubs(std::index_sequence<N...>) {
  return {{reinterpret_cast<void *>(&probe_stub<N>)...}};
}

void *probe_stub_for(const char *symbol) {
  static const std::array<void *, kProbeStubs> stubs = make_probe_stubs(std::make_index_sequence<kProbeStubs>());
  const size_t index = g_probe_stubs_used.fetch_add(1);
  if (index >= kProbeStubs) return nullptr;
  std::snprintf(g_probe_stub_names[index], sizeof g_probe_stub_names[index], "%s", symbol);
  return stubs[index];
}

CUresult get_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *symbolStatus) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<cuuint64_t>(3)) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  bool found = resolve(symbol, cudaVersion, flags, pfn, &status);
  if (leaseguard::sim::probing()) {
    std::fprintf(stderr, "leaseguard-sim: cuGetProcAddress(%s, %d, %llu) -> %s\n", symbol, cudaVersion,
                 static_cast<unsigned long long>(flags), *pfn != nullptr ? "implemented" : "NULL (a probe stub)");
    if (*pfn == nullptr && found) *pfn = probe_stub_for(symbol);
  }
  if (symbolStatus != nullptr) *symbolStatus = status;
  return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                                                            int cudaVersion, cuuint64_t flags) {
  LG_SIM_ENTRY(cuGetProcAddress);
  return get_proc_address(symbol, pfn, cudaVersion, flags, nullptr);
}

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus) {
  LG_SIM_ENTRY(cuGetProcAddress_v2);
  return get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}
