// cuGetProcAddress and cuGetProcAddress_v2: the way the CUDA runtime, NCCL and PyTorch reach
// every driver function.
//
// The real function is always called first with identical arguments, so the driver picks
// the variant for (symbol, cudaVersion, flags) and fills symbolStatus itself. If the answer
// belongs to a hooked family (the table's proc_family column: core/base/entry_points.h),
// leaseguard substitutes its wrapper of exactly that variant: the variant is identified by
// comparing the returned pointer with the driver's exports of each variant of the family.
// The self-lookup ("cuGetProcAddress") is answered with leaseguard's own wrappers, so later
// lookups stay visible. Every other symbol, including ones newer than leaseguard, passes
// through untouched.
#include <dlfcn.h>

#include "hook_support.h"
#include "log.h"
#include "real_dlsym.h"

using leaseguard::Api;
using leaseguard::EntryPoint;
using leaseguard::kEntryPoints;
using leaseguard::Vendor;
using namespace leaseguard::interpose;

namespace {

// The variant whose driver export is `function`, among those of `family`; or, if the driver
// returned a pointer that is no export, the variant its rules give for the version and
// flags. Api::Unknown if `family` is not hooked.
Api identify_variant(const char *family, void *function, int cuda_version, cuuint64_t flags) {
  void *handle = handle_of_object_containing(function);
  const EntryPoint *by_rule = nullptr;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  bool family_hooked = false;
  for (const EntryPoint &row : kEntryPoints) {
    if (row.vendor != Vendor::Cuda || row.proc_family != family) continue;
    family_hooked = true;
    if (handle != nullptr && real_dlsym()(handle, row.name.data()) == function) return row.api;
    if (row.since <= cuda_version && row.per_thread == per_thread &&
        (by_rule == nullptr || by_rule->since <= row.since))
      by_rule = &row;
  }
  if (!family_hooked || by_rule == nullptr) return Api::Unknown;
  leaseguard::log_debug("cuGetProcAddress(%s): driver returned a non-exported function; wrapping it as %s", family,
                        by_rule->name.data());
  return by_rule->api;
}

void substitute(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr || g_pass_through) return;
  if (is_wrapper(*pfn)) return;
  const Api hook = identify_variant(symbol, *pfn, cuda_version, flags);
  if (hook == Api::Unknown) return;
  remember_real(hook, *pfn);
  leaseguard::log_debug("cuGetProcAddress(%s, %d, %llu) -> %s wrapped", symbol, cuda_version,
                        static_cast<unsigned long long>(flags), leaseguard::api_name(hook).data());
  *pfn = wrapper_of(hook);
}

}  // namespace

LG_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  const auto real_fn = real<Api::cuGetProcAddress>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult status = real_fn(symbol, pfn, cudaVersion, flags);
  if (status == CUDA_SUCCESS) substitute(symbol, pfn, cudaVersion, flags);
  return status;
}

LG_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus) {
  const auto real_fn = real<Api::cuGetProcAddress_v2>();
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult status = real_fn(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (status == CUDA_SUCCESS) substitute(symbol, pfn, cudaVersion, flags);
  return status;
}
