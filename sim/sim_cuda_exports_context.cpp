// The simulated driver's entry points for device identity, context settings and pointer
// queries: what the CUDA runtime reads when it starts (cudaGetDeviceProperties,
// cudaDeviceGetLimit, stream priorities), what a program sets and reads back, and what
// cudaPointerGetAttributes asks of an address. Settings are kept per context and
// not acted on: the simulator has no caches, banks or device-side heap to apply them to.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lg_cuda.h"
#include "sim_device.h"
#include "sim_entry.h"
#include "sim_visible_devices.h"

using leaseguard::sim::kFirstPciBus;
using leaseguard::sim::SimContext;
using leaseguard::sim::SimDriver;

namespace {

SimDriver &driver() { return SimDriver::instance(); }

CUresult check_device(CUdevice dev) {
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= driver().device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult device_uuid(CUuuid *uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  // Stable and distinct per GPU of the node, whatever the process's CUDA_VISIBLE_DEVICES.
  leaseguard::sim::gpu_uuid(driver().node_gpu(dev), reinterpret_cast<unsigned char *>(uuid->bytes));
  return CUDA_SUCCESS;
}

constexpr size_t kLimitCount = sizeof(SimContext{}.limits) / sizeof(SimContext{}.limits[0]);

}  // namespace

LG_SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetUuid);
  return device_uuid(uuid, dev);
}

LG_SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetUuid_v2);
  return device_uuid(uuid, dev);
}

LG_SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  LG_SIM_ENTRY(cuDeviceGetPCIBusId);
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  std::snprintf(pciBusId, static_cast<size_t>(len), "0000:%02x:00.0", kFirstPciBus + driver().node_gpu(dev));
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
  LG_SIM_ENTRY(cuDeviceGetByPCIBusId);
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  // Accepted as the driver does: [domain:]bus:device[.function], in hexadecimal.
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &device, &function) < 3 &&
      std::sscanf(pciBusId, "%x:%x.%x", &bus, &device, &function) < 2)
    return CUDA_ERROR_INVALID_VALUE;
  // The bus names a GPU of the node; the process knows it by its ordinal, if it sees it.
  const int gpu = static_cast<int>(bus) - kFirstPciBus;
  for (int ordinal = 0; domain == 0 && device == 0 && ordinal < driver().device_count(); ++ordinal)
    if (driver().node_gpu(ordinal) == gpu) {
      *dev = ordinal;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_DEVICE;
}

// Every simulated device shares the host's memory, so each can reach the others'.
LG_SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
  LG_SIM_ENTRY(cuDeviceCanAccessPeer);
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = check_device(dev); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_device(peerDev); status != CUDA_SUCCESS) return status;
  *canAccessPeer = dev != peerDev ? 1 : 0;
  return CUDA_SUCCESS;
}

LG_SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  LG_SIM_ENTRY(cuDevicePrimaryCtxSetFlags_v2);
  return driver().set_primary_flags(dev, flags);
}

LG_SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags) {
  LG_SIM_ENTRY(cuCtxGetFlags);
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    *flags = context.flags;
    return CUDA_SUCCESS;
  });
}

// 3020: the API version of every context made through the _v2 entry points and later.
LG_SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
  LG_SIM_ENTRY(cuCtxGetApiVersion);
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(ctx, [&](SimContext &) {
    *version = 3020;
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  LG_SIM_ENTRY(cuCtxGetDevice_v2);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(ctx, [&](SimContext &context) {
    *device = context.device;
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
  LG_SIM_ENTRY(cuCtxGetLimit);
  if (pvalue == nullptr || static_cast<size_t>(limit) >= kLimitCount) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    *pvalue = context.limits[limit];
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  LG_SIM_ENTRY(cuCtxSetLimit);
  if (static_cast<size_t>(limit) >= kLimitCount) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    context.limits[limit] = value;
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig) {
  LG_SIM_ENTRY(cuCtxGetCacheConfig);
  if (pconfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    *pconfig = static_cast<CUfunc_cache>(context.cache_config);
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  LG_SIM_ENTRY(cuCtxSetCacheConfig);
  if (static_cast<unsigned>(config) > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    context.cache_config = config;
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig) {
  LG_SIM_ENTRY(cuCtxGetSharedMemConfig);
  if (pConfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    *pConfig = static_cast<CUsharedconfig>(context.shared_config);
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  LG_SIM_ENTRY(cuCtxSetSharedMemConfig);
  if (static_cast<unsigned>(config) > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) return CUDA_ERROR_INVALID_VALUE;
  return driver().with_context(nullptr, [&](SimContext &context) {
    context.shared_config = config;
    return CUDA_SUCCESS;
  });
}

// A Hopper GPU's range: 0 (least) to -5 (greatest).
LG_SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  LG_SIM_ENTRY(cuCtxGetStreamPriorityRange);
  return driver().with_context(nullptr, [&](SimContext &) {
    if (leastPriority != nullptr) *leastPriority = 0;
    if (greatestPriority != nullptr) *greatestPriority = -5;
    return CUDA_SUCCESS;
  });
}

// Lazy, the driver's default since CUDA 12.2 (CUDA_MODULE_LOADING unset).
LG_SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  LG_SIM_ENTRY(cuModuleGetLoadingMode);
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

// ---- Pointer attributes ----

namespace {

using leaseguard::sim::MemoryKind;

// One attribute of the memory holding `address`, written as the driver writes it: CUcontext,
// unsigned (memory type, flags), int (ordinal), pointers and sizes, or bool as an int.
CUresult pointer_attribute(void *data, CUpointer_attribute attribute, const SimDriver::PointerInfo &info,
                           uint64_t address) {
  const bool host = info.kind == MemoryKind::Host;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(info.context);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned *>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:  // one address space: the same address
      *static_cast<CUdeviceptr *>(data) = address;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host && info.kind != MemoryKind::Managed) return CUDA_ERROR_INVALID_VALUE;  // device memory has none
      *static_cast<void **>(data) = reinterpret_cast<void *>(address);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long *>(data) = info.base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<int *>(data) = info.kind == MemoryKind::Managed ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int *>(data) = info.device; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr *>(data) = info.base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t *>(data) = info.size; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<int *>(data) = 1; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      *static_cast<unsigned *>(data) = 0x3;  // CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool *>(data) = reinterpret_cast<CUmemoryPool>(info.pool);
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

LG_SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  LG_SIM_ENTRY(cuPointerGetAttribute);
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  SimDriver::PointerInfo info;
  if (CUresult status = driver().describe(ptr, &info); status != CUDA_SUCCESS) return status;
  return pointer_attribute(data, attribute, info, ptr);
}

// Memory the simulator does not know is host memory it never saw: the attributes say so
// (memory type 0, no context) and the call succeeds, as the driver's does.
LG_SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                              CUdeviceptr ptr) {
  LG_SIM_ENTRY(cuPointerGetAttributes);
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!driver().initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  SimDriver::PointerInfo info;
  const bool known = driver().describe(ptr, &info) == CUDA_SUCCESS;
  for (unsigned i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) continue;
    if (!known || pointer_attribute(data[i], attributes[i], info, ptr) != CUDA_SUCCESS) {
      // Unanswerable for this memory: zero of the attribute's width (a pointer's at most).
      if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE || attributes[i] == CU_POINTER_ATTRIBUTE_ACCESS_FLAGS ||
          attributes[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED || attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED)
        *static_cast<unsigned *>(data[i]) = 0;
      else if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *static_cast<int *>(data[i]) = -1;  // no device
      else *static_cast<void **>(data[i]) = nullptr;
    }
  }
  return CUDA_SUCCESS;
}

// Peer access between contexts: allowed between contexts of different devices (as
// cuDeviceCanAccessPeer answers), recorded per context; nothing else changes, as every
// simulated device's memory is host memory.
LG_SIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  LG_SIM_ENTRY(cuCtxEnablePeerAccess);
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int peer_device = -1;
  if (CUresult status = driver().with_context(peerContext,
                                              [&](SimContext &peer) {
                                                peer_device = peer.device;
                                                return CUDA_SUCCESS;
                                              });
      peerContext == nullptr || status != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_CONTEXT;
  return driver().with_context(nullptr, [&](SimContext &context) {
    if (context.device == peer_device) return CUDA_ERROR_INVALID_DEVICE;
    if (std::find(context.peers.begin(), context.peers.end(), peerContext) != context.peers.end())
      return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    context.peers.push_back(peerContext);
    return CUDA_SUCCESS;
  });
}

LG_SIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  LG_SIM_ENTRY(cuCtxDisablePeerAccess);
  if (peerContext == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return driver().with_context(nullptr, [&](SimContext &context) {
    auto found = std::find(context.peers.begin(), context.peers.end(), peerContext);
    if (found == context.peers.end()) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    context.peers.erase(found);
    return CUDA_SUCCESS;
  });
}
