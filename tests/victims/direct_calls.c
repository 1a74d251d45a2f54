/* Calls every hooked allocation entry point directly (linked with -lcuda), in both
 * generations and the per-thread-stream variants. For each entry point it frees one
 * allocation and leaks one of a distinctive size (1000 + 16 * index bytes, or the pitched
 * equivalent), so the test can match every leak to its entry point. It also exercises
 * implicit frees: allocations in a destroyed context and in a reset primary context. */
#include <stdint.h>
#include <string.h>

#include "victim.h"

static VICTIM_NOINLINE void leak_cuMemAlloc_v2(void) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAlloc_v2(&freed, 4096));
  CHECK(cuMemFree_v2(freed));
  CHECK(cuMemAlloc_v2(&kept, 1000));
}

static VICTIM_NOINLINE void leak_cuMemAlloc_legacy(void) {
  CUdeviceptr_v1 kept, freed;
  CHECK(cuMemAlloc(&freed, 4096));
  CHECK(cuMemFree(freed));
  CHECK(cuMemAlloc(&kept, 1016));
}

static VICTIM_NOINLINE void leak_cuMemAllocPitch_v2(void) {
  CUdeviceptr kept, freed;
  size_t pitch;
  CHECK(cuMemAllocPitch_v2(&freed, &pitch, 100, 4, 4));
  CHECK(cuMemFree_v2(freed));
  CHECK(cuMemAllocPitch_v2(&kept, &pitch, 100, 3, 4)); /* 3 rows of 512 bytes */
}

static VICTIM_NOINLINE void leak_cuMemAllocPitch_legacy(void) {
  CUdeviceptr_v1 kept, freed;
  unsigned int pitch;
  CHECK(cuMemAllocPitch(&freed, &pitch, 100, 4, 4));
  CHECK(cuMemFree(freed));
  CHECK(cuMemAllocPitch(&kept, &pitch, 100, 5, 4)); /* 5 rows of 512 bytes */
}

static VICTIM_NOINLINE void leak_cuMemAllocManaged(void) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAllocManaged(&freed, 4096, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuMemFree_v2(freed));
  CHECK(cuMemAllocManaged(&kept, 1032, CU_MEM_ATTACH_GLOBAL));
}

static VICTIM_NOINLINE void leak_cuMemAllocHost(void) {
  void *kept, *freed;
  CHECK(cuMemAllocHost(&freed, 4096));
  CHECK(cuMemFreeHost(freed));
  CHECK(cuMemAllocHost(&kept, 1048));
}

static VICTIM_NOINLINE void leak_cuMemAllocHost_v2(void) {
  void *kept, *freed;
  CHECK(cuMemAllocHost_v2(&freed, 4096));
  CHECK(cuMemFreeHost(freed));
  CHECK(cuMemAllocHost_v2(&kept, 1064));
}

static VICTIM_NOINLINE void leak_cuMemHostAlloc(void) {
  void *kept, *freed;
  CHECK(cuMemHostAlloc(&freed, 4096, 0));
  CHECK(cuMemFreeHost(freed));
  CHECK(cuMemHostAlloc(&kept, 1080, CU_MEMHOSTALLOC_PORTABLE));
}

static VICTIM_NOINLINE void leak_cuMemAllocAsync(CUstream stream) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAllocAsync(&freed, 4096, stream));
  CHECK(cuMemFreeAsync(freed, stream));
  CHECK(cuMemAllocAsync(&kept, 1096, stream));
}

static VICTIM_NOINLINE void leak_cuMemAllocAsync_ptsz(CUstream stream) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAllocAsync_ptsz(&freed, 4096, stream));
  CHECK(cuMemFreeAsync_ptsz(freed, stream));
  CHECK(cuMemAllocAsync_ptsz(&kept, 1112, stream));
}

static VICTIM_NOINLINE void leak_cuMemAllocFromPoolAsync(CUmemoryPool pool, CUstream stream) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAllocFromPoolAsync(&freed, 4096, pool, stream));
  CHECK(cuMemFreeAsync(freed, stream));
  CHECK(cuMemAllocFromPoolAsync(&kept, 1128, pool, stream));
}

static VICTIM_NOINLINE void leak_cuMemAllocFromPoolAsync_ptsz(CUmemoryPool pool, CUstream stream) {
  CUdeviceptr kept, freed;
  CHECK(cuMemAllocFromPoolAsync_ptsz(&freed, 4096, pool, stream));
  CHECK(cuMemFreeAsync_ptsz(freed, stream));
  CHECK(cuMemAllocFromPoolAsync_ptsz(&kept, 1144, pool, stream));
}

/* Leaks inside a context that is then destroyed: reported with ended_by context_destroy. */
static VICTIM_NOINLINE void leak_into_destroyed_context(CUdevice device, CUcontext primary, int legacy) {
  CUcontext context;
  CUdeviceptr leaked;
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&leaked, 2000));
  if (legacy) CHECK(cuCtxDestroy(context));
  else CHECK(cuCtxDestroy_v2(context));
  CHECK(cuCtxSetCurrent(primary));
}

/* Leaks in a second device's primary context, which is then reset. */
static VICTIM_NOINLINE void leak_into_reset_primary(void) {
  CUcontext primary, previous;
  CUdeviceptr leaked;
  CHECK(cuCtxGetCurrent(&previous));
  CHECK(cuDevicePrimaryCtxRetain(&primary, 1));
  CHECK(cuCtxPushCurrent_v2(primary));
  CHECK(cuMemAlloc_v2(&leaked, 3000));
  CHECK(cuCtxPopCurrent_v2(&primary));
  CHECK(cuDevicePrimaryCtxReset_v2(1));
  CHECK(cuDevicePrimaryCtxRelease_v2(1));
  CHECK(cuCtxSetCurrent(previous));
}

int main(void) {
  CUcontext primary = victim_primary_context();
  CUdevice device = 0;
  CUstream stream;
  CUmemoryPool pool;
  CHECK(cuStreamCreate(&stream, 0));
  CHECK(cuDeviceGetDefaultMemPool(&pool, device));

  leak_cuMemAlloc_v2();
  leak_cuMemAlloc_legacy();
  leak_cuMemAllocPitch_v2();
  leak_cuMemAllocPitch_legacy();
  leak_cuMemAllocManaged();
  leak_cuMemAllocHost();
  leak_cuMemAllocHost_v2();
  leak_cuMemHostAlloc();
  leak_cuMemAllocAsync(stream);
  leak_cuMemAllocAsync_ptsz(stream);
  leak_cuMemAllocFromPoolAsync(pool, stream);
  leak_cuMemAllocFromPoolAsync_ptsz(pool, stream);
  leak_into_destroyed_context(device, primary, 0);
  leak_into_destroyed_context(device, primary, 1);
  leak_into_reset_primary();

  /* Frees leaseguard does not know must reach the driver untouched, status and all. */
  if (cuMemFree_v2((CUdeviceptr)0x1234500) != CUDA_ERROR_INVALID_VALUE) return 4;
  if (cuMemFreeHost(NULL) != CUDA_ERROR_INVALID_VALUE) return 4;
  /* NULL out-parameters are the driver's to reject, never read by the hook. */
  if (cuMemAlloc_v2(NULL, 64) != CUDA_ERROR_INVALID_VALUE) return 5;
  if (cuMemAllocHost_v2(NULL, 64) != CUDA_ERROR_INVALID_VALUE) return 5;

  CHECK(cuStreamDestroy_v2(stream));
  printf("direct_calls done\n");
  return 0;
}
