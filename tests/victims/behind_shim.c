/* The allocations whose report depends on leaseguard's own questions to the driver: the
 * device of each allocation (cuCtxGetDevice), the implicit frees of a context's destruction
 * and of a primary context's reset, and a stream-ordered allocation from a device's default
 * pool (its pool queries). Run with and without a HAMi-style shim (behind_shim_lib.c) in
 * front of the driver: the reports must be the same. Needs LEASEGUARD_SIM_DEVICES=2. */
#include "victim.h"

static VICTIM_NOINLINE void leak_on_second_device(void) {
  CUdevice device;
  CUcontext context;
  CUdeviceptr leaked;
  CHECK(cuDeviceGet(&device, 1));
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&leaked, 1111));
  CHECK(cuCtxPopCurrent_v2(&context));
}

static VICTIM_NOINLINE void destroy_a_context_with_memory(void) {
  CUdevice device;
  CUcontext context;
  CUdeviceptr dropped;
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&dropped, 2222));
  CHECK(cuCtxDestroy_v2(context));  // frees it: no leak at exit
}

static VICTIM_NOINLINE void reset_a_primary_context_with_memory(void) {
  CUdevice device;
  CUcontext context;
  CUdeviceptr dropped;
  CHECK(cuDeviceGet(&device, 1));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxPushCurrent_v2(context));
  CHECK(cuMemAlloc_v2(&dropped, 3333));
  CHECK(cuCtxPopCurrent_v2(&context));
  CHECK(cuDevicePrimaryCtxReset_v2(device));  // frees it: no leak at exit
}

static VICTIM_NOINLINE void leak_from_the_default_pool(void) {
  CUdeviceptr leaked;
  victim_primary_context();
  CHECK(cuMemAllocAsync(&leaked, 4444, NULL));
  CHECK(cuStreamSynchronize(NULL));
}

int main(void) {
  CHECK(cuInit(0));
  leak_on_second_device();
  destroy_a_context_with_memory();
  reset_a_primary_context_with_memory();
  leak_from_the_default_pool();
  return 0;
}
