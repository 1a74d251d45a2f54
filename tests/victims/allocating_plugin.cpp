// A plugin that allocates device memory when loaded and frees it when unloaded (dlclose),
// with work in between: for the fidelity victim's dlopen/dlclose mode.
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

namespace {
CUdeviceptr g_buffer = 0;

__attribute__((constructor)) void plugin_load() { cuMemAlloc_v2(&g_buffer, 8192); }
__attribute__((destructor)) void plugin_unload() { cuMemFree_v2(g_buffer); }
}  // namespace

extern "C" int plugin_work(int round) {
  CUdeviceptr scratch = 0;
  if (cuMemAlloc_v2(&scratch, 512) != CUDA_SUCCESS) return -1;
  unsigned value = 0;
  cuMemsetD32_v2(scratch, 7u + static_cast<unsigned>(round), 1);
  cuMemcpyDtoH_v2(&value, scratch, sizeof value);
  cuMemFree_v2(scratch);
  return static_cast<int>(value);
}
