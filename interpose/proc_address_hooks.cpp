// cuGetProcAddress and cuGetProcAddress_v2: the way the CUDA runtime, NCCL and PyTorch reach
// every driver function.
//
// The real function is always called first with identical arguments, so the driver picks
// the variant for (symbol, cudaVersion, flags) and fills symbolStatus itself. If the answer
// belongs to a hooked family, leaseguard substitutes its wrapper of exactly that variant:
// the variant is identified by comparing the returned pointer with the driver's exports of
// each variant of the family. The self-lookup ("cuGetProcAddress") is answered with
// leaseguard's own wrappers, so later lookups stay visible. Every other symbol, including
// ones newer than leaseguard, passes through untouched.
#include <dlfcn.h>

#include <cstring>

#include "hook_table.h"
#include "lg_cuda.h"
#include "log.h"
#include "preload_state.h"
#include "real_dlsym.h"

using namespace leaseguard::interpose;

#define LG_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The hook whose driver export is `function`, among the variants of `family`; or, if the
// driver returned a pointer that is no export, the variant its rules give for the version
// and flags. -1 if `family` is not hooked.
int identify_variant(const char *family, void *function, int cuda_version, cuuint64_t flags) {
  void *handle = handle_of_object_containing(function);

  int by_rule = -1;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  bool family_hooked = false;
  for (int i = 0; i < kHookCount; ++i) {
    const HookInfo &hook = hook_info(i);
    if (std::strcmp(hook.family, family) != 0) continue;
    family_hooked = true;
    if (handle != nullptr && real_dlsym()(handle, hook.name) == function) return i;
    if (hook.since <= cuda_version && hook.per_thread == per_thread &&
        (by_rule < 0 || hook_info(by_rule).since <= hook.since))
      by_rule = i;
  }
  if (!family_hooked) return -1;
  if (by_rule >= 0)
    leaseguard::log_debug("cuGetProcAddress(%s): driver returned a non-exported function; wrapping it as %s", family,
                          hook_info(by_rule).name);
  return by_rule;
}

void substitute(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr || g_pass_through) return;
  if (is_wrapper(*pfn)) return;
  int hook = identify_variant(symbol, *pfn, cuda_version, flags);
  if (hook < 0) return;
  remember_real(hook, *pfn);
  leaseguard::log_debug("cuGetProcAddress(%s, %d, %llu) -> %s wrapped", symbol, cuda_version,
                        static_cast<unsigned long long>(flags), hook_info(hook).name);
  *pfn = hook_info(hook).wrapper;
}

}  // namespace

LG_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  auto real_fn = real<lg_pfn_cuGetProcAddress>(Hook::cuGetProcAddress);
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult status = real_fn(symbol, pfn, cudaVersion, flags);
  if (status == CUDA_SUCCESS) substitute(symbol, pfn, cudaVersion, flags);
  return status;
}

LG_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus) {
  auto real_fn = real<lg_pfn_cuGetProcAddress_v2>(Hook::cuGetProcAddress_v2);
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult status = real_fn(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (status == CUDA_SUCCESS) substitute(symbol, pfn, cudaVersion, flags);
  return status;
}
