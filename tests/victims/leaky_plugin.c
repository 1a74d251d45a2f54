/* A plugin that leaks device memory and is then unloaded: its leak must still be named.
 * Built twice: as libleaky_plugin.so, and with LEAK_FUNCTION=leak_in_second_plugin as
 * libleaky_plugin_b.so, the same code under another name, which the loader maps where the
 * first one was once that is unloaded. */
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

#ifndef LEAK_FUNCTION
#define LEAK_FUNCTION leak_in_plugin
#endif

__attribute__((noinline)) int LEAK_FUNCTION(void) {
  CUdeviceptr leaked = 0;
  return cuMemAlloc_v2(&leaked, 3210) == CUDA_SUCCESS ? 0 : 1;
}
