/* A plugin that leaks device memory and is then unloaded: its leak must still be named. */
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

__attribute__((noinline)) int leak_in_plugin(void) {
  CUdeviceptr leaked = 0;
  return cuMemAlloc_v2(&leaked, 3210) == CUDA_SUCCESS ? 0 : 1;
}
