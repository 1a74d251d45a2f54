/* A lease with policy reclaim (or abort) ended by the program while it still owns memory of
 * every family. Usage: lease_reclaim reclaim | abort
 *   reclaim: leaseguard_lease_end returns 4; the device memory is back (cuMemGetInfo), and
 *            the program's late frees all succeed without reaching the driver (which would
 *            answer CUDA_ERROR_INVALID_VALUE to a double free).
 *   abort:   the lease ends with a leak, so the process is aborted after the report. */
#include <string.h>

#include "leaseguard/leaseguard.h"
#include "victim.h"

static size_t free_device_memory(void) {
  size_t free_bytes = 0, total = 0;
  CHECK(cuMemGetInfo_v2(&free_bytes, &total));
  return free_bytes;
}

static VICTIM_NOINLINE void allocate_everything(CUdeviceptr *device, CUdeviceptr_v1 *legacy, void **host,
                                                CUdeviceptr *async) {
  CHECK(cuMemAlloc_v2(device, 1 << 20));
  CHECK(cuMemAlloc(legacy, 4096));
  CHECK(cuMemAllocHost_v2(host, 8192));
  CHECK(cuMemAllocAsync(async, 2 << 20, NULL));
}

int main(int argc, char **argv) {
  int abort_mode = argc > 1 && strcmp(argv[1], "abort") == 0;
  victim_primary_context();
  size_t before = free_device_memory();
  leaseguard_lease_t lease = leaseguard_lease_begin("job", 0, abort_mode ? LEASEGUARD_ABORT : LEASEGUARD_RECLAIM);
  if (lease == 0 || leaseguard_lease_enter(lease) != 0) return 10;
  CUdeviceptr device, async;
  CUdeviceptr_v1 legacy;
  void *host;
  allocate_everything(&device, &legacy, &host, &async);
  leaseguard_lease_leave();
  if (free_device_memory() >= before) return 11;
  int leaked = leaseguard_lease_end(lease); /* abort mode dies here */
  if (leaked != 4) {
    fprintf(stderr, "leaked %d, expected 4\n", leaked);
    return 12;
  }
  if (free_device_memory() != before) {
    fprintf(stderr, "device memory was not given back\n");
    return 13;
  }
  /* Late frees: each succeeds, none reaches the driver (a double free there would fail). */
  if (cuMemFree_v2(device) != CUDA_SUCCESS) return 14;
  if (cuMemFree(legacy) != CUDA_SUCCESS) return 15;
  if (cuMemFreeHost(host) != CUDA_SUCCESS) return 16;
  if (cuMemFreeAsync(async, NULL) != CUDA_SUCCESS) return 17;
  /* A second free of the same pointer is the program's own double free: the driver's answer. */
  if (cuMemFree_v2(device) != CUDA_ERROR_INVALID_VALUE) return 18;
  printf("lease_reclaim done\n");
  return 0;
}
