// Gives reclaimed HIP allocations back through the real HIP runtime, each with the release
// that matches its allocation, on its device (the contract is in core/reclaim_backend.h).
#include "hip_reclaim.h"

#include "driver_queries.h"
#include "lg_hip.h"
#include "vmm_mappings.h"

namespace leaseguard::interpose {
namespace {

template <typename Function>
Function runtime(void *anchor, const char *name) {
  return reinterpret_cast<Function>(driver_symbol(anchor, name));
}

template <typename Release, typename... Args>
hipError_t call(void *anchor, const char *name, Args... args) {
  auto release = runtime<Release>(anchor, name);
  return release != nullptr ? release(args...) : hipErrorNotFound;
}

hipError_t free_reservation(void *anchor, const HandleRecord &record) {
  auto unmap = runtime<lg_pfn_hipMemUnmap>(anchor, "hipMemUnmap");
  if (unmap == nullptr) return hipErrorNotFound;
  for (const auto &[base, size] : mappings_within(record.address, record.bytes)) {
    hipError_t status = unmap(reinterpret_cast<void *>(base), size);
    if (status != hipSuccess) return status;
    note_unmapped(base, size);
  }
  return call<lg_pfn_hipMemAddressFree>(anchor, "hipMemAddressFree", reinterpret_cast<void *>(record.address),
                                        static_cast<size_t>(record.bytes));
}

hipError_t release_matching(void *anchor, const HandleRecord &record) {
  void *value = reinterpret_cast<void *>(record.address);
  switch (record.api) {
    case Api::hipMallocAsync:
    case Api::hipMallocFromPoolAsync: {
      hipError_t status = call<lg_pfn_hipFreeAsync>(anchor, "hipFreeAsync", value, static_cast<hipStream_t>(nullptr));
      return status == hipSuccess ? call<lg_pfn_hipStreamSynchronize>(anchor, "hipStreamSynchronize",
                                                                      static_cast<hipStream_t>(nullptr))
                                  : status;
    }
    case Api::hipMallocArray:
    case Api::hipMalloc3DArray:
      return call<lg_pfn_hipFreeArray>(anchor, "hipFreeArray", static_cast<hipArray_t>(value));
    case Api::hipArrayCreate:
    case Api::hipArray3DCreate:
      return call<lg_pfn_hipArrayDestroy>(anchor, "hipArrayDestroy", static_cast<hipArray_t>(value));
    case Api::hipHostMalloc:
    case Api::hipHostAlloc:
      return call<lg_pfn_hipHostFree>(anchor, "hipHostFree", value);
    case Api::hipMallocHost:
    case Api::hipMemAllocHost:
      return call<lg_pfn_hipFreeHost>(anchor, "hipFreeHost", value);
    case Api::hipMemPoolCreate:
      return call<lg_pfn_hipMemPoolDestroy>(anchor, "hipMemPoolDestroy", static_cast<hipMemPool_t>(value));
    case Api::hipMemCreate:
    case Api::hipMemRetainAllocationHandle:
    case Api::hipMemImportFromShareableHandle:
      return call<lg_pfn_hipMemRelease>(anchor, "hipMemRelease", static_cast<hipMemGenericAllocationHandle_t>(value));
    case Api::hipMemAddressReserve:
      return free_reservation(anchor, record);
    case Api::hipHostRegister:
      return call<lg_pfn_hipHostUnregister>(anchor, "hipHostUnregister", value);
    case Api::hipIpcOpenMemHandle:
      return call<lg_pfn_hipIpcCloseMemHandle>(anchor, "hipIpcCloseMemHandle", value);
    default:  // device, managed and pitched memory
      return call<lg_pfn_hipFree>(anchor, "hipFree", value);
  }
}

}  // namespace

int release_hip(void *anchor, const HandleRecord &record) noexcept {
  // The allocation's device current for the call (the watchdog thread's is device 0), and
  // the caller's restored afterwards.
  auto get_device = runtime<lg_pfn_hipGetDevice>(anchor, "hipGetDevice");
  auto set_device = runtime<lg_pfn_hipSetDevice>(anchor, "hipSetDevice");
  int saved = -1;
  const bool switched = record.device >= 0 && get_device != nullptr && set_device != nullptr &&
                        get_device(&saved) == hipSuccess && saved != record.device &&
                        set_device(record.device) == hipSuccess;
  hipError_t status = release_matching(anchor, record);
  if (switched) set_device(saved);
  return static_cast<int>(status);
}

}  // namespace leaseguard::interpose
