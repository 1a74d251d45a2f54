/* The scale the reachability budget is set at: HOST_BLOCKS live host heap blocks (32 bytes
 * each, held by a global array) and DEVICE live device allocations (256 bytes each, held by
 * another), all reachable at exit. Run under `leaseguard run --sim` with LEASEGUARD_LOG=debug:
 * the classification's line says its time, the bytes it scanned and the memory it took
 * (bench/reachability_costs prints them).
 *
 * With BULK_MIB, one more block of that many MiB, held too, whose words point nowhere: the
 * scan's speed through memory rather than through pointers. Its words are pseudo-random, as
 * data is: pages of one repeated pattern are merged by this machine's hypervisor, and the
 * first read of each merged page then costs the host a fault the scan would be charged for.
 *
 * With REACHABILITY_SCALE_CHECK=1 in its environment, it asks for a live check
 * (leaseguard_check(), found at run time: the program is not linked to leaseguard) before it
 * returns: the check's line comes first, the exit's after it.
 *
 *   reachability_scale [HOST_BLOCKS [DEVICE [BULK_MIB]]]   (default 1000000 100000 0) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

__attribute__((used)) void **g_blocks;
__attribute__((used)) CUdeviceptr *g_device;
__attribute__((used)) unsigned char *g_bulk;

int main(int argc, char **argv) {
  const long host_blocks = argc > 1 ? atol(argv[1]) : 1000000;
  const long device = argc > 2 ? atol(argv[2]) : 100000;
  const long bulk_mib = argc > 3 ? atol(argv[3]) : 0;
  CUdevice dev;
  CUcontext context;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, dev) != CUDA_SUCCESS || cuCtxSetCurrent(context) != CUDA_SUCCESS)
    return 3;
  g_blocks = malloc(sizeof(void *) * (size_t)host_blocks);
  g_device = malloc(sizeof(CUdeviceptr) * (size_t)device);
  if (g_blocks == NULL || g_device == NULL) return 4;
  for (long i = 0; i < host_blocks; ++i) g_blocks[i] = malloc(32);
  for (long i = 0; i < device; ++i)
    if (cuMemAlloc_v2(&g_device[i], 256) != CUDA_SUCCESS) return 5;
  if (bulk_mib > 0) {
    g_bulk = malloc((size_t)bulk_mib << 20);
    if (g_bulk == NULL) return 6;
    uint64_t state = 88172645463325252ull;  // xorshift64
    for (size_t i = 0; i < ((size_t)bulk_mib << 20) / sizeof state; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      /* The top byte set: never an address in this process's user space. */
      ((uint64_t *)g_bulk)[i] = state | 0xff00000000000000ull;
    }
  }
  printf("%ld host block(s), %ld device allocation(s) held\n", host_blocks, device);
  const char *check = getenv("REACHABILITY_SCALE_CHECK");
  if (check != NULL && check[0] == '1') {
    int (*leaseguard_check)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "leaseguard_check");
    if (leaseguard_check == NULL || leaseguard_check() != 0) return 7;
  }
  return 0;
}
