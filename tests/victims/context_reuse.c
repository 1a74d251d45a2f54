/* A context is destroyed and the next one, on another device, gets its handle (the
 * simulator does that with LEASEGUARD_SIM_REUSE_CONTEXTS=1, as a real driver's heap may).
 * The leak made in the second context must be reported on the second device, although the
 * same thread allocated under the same handle on the first device just before.
 * Prints "handle reused" when the handle was the same, so the test knows it tested that. */
#include "victim.h"

static VICTIM_NOINLINE CUcontext allocate_and_free_on(CUdevice device) {
  CUcontext context;
  CUdeviceptr freed;
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&freed, 4096));
  CHECK(cuMemFree_v2(freed));
  return context;
}

static VICTIM_NOINLINE CUcontext leak_on(CUdevice device) {
  CUcontext context;
  CUdeviceptr leaked;
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&leaked, 6000));
  return context;
}

int main(void) {
  CUdevice first, second;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&first, 0));
  CHECK(cuDeviceGet(&second, 1));
  CUcontext before = allocate_and_free_on(first);
  CHECK(cuCtxDestroy_v2(before));
  CUcontext after = leak_on(second);
  if (after == before) printf("handle reused\n");
  return 0;
}
