/* One thread destroys a context. Before that destroy returns (the simulator lingers in it
 * after the context is gone: LEASEGUARD_SIM_DESTROY_LINGER_MS), the main thread creates a
 * context, which is given the destroyed one's handle (LEASEGUARD_SIM_REUSE_CONTEXTS=1), and
 * leaks in it. That leak is the new context's and must be reported when the process exits;
 * the destroyed context's own leak is reported as gone with it.
 * Prints "handle reused before the destroy returned" when that is what happened, so the
 * test knows it tested that. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "victim.h"

static CUcontext doomed;
static atomic_int destroy_returned;

static void *destroy_doomed(void *unused) {
  (void)unused;
  CHECK(cuCtxDestroy_v2(doomed));
  atomic_store(&destroy_returned, 1);
  return NULL;
}

static VICTIM_NOINLINE void leak_in_doomed_context(void) {
  CUdeviceptr gone;
  CHECK(cuMemAlloc_v2(&gone, 3000));
}

static VICTIM_NOINLINE CUcontext leak_in_new_context(CUdevice device) {
  CUcontext context;
  CUdeviceptr kept;
  CHECK(cuCtxCreate_v2(&context, 0, device));
  CHECK(cuMemAlloc_v2(&kept, 7000));
  return context;
}

/* Whether the driver has destroyed `context` yet: it refuses to make it current then. */
static int destroyed(CUcontext context) {
  if (cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) return 1;
  CUcontext popped;
  CHECK(cuCtxPopCurrent_v2(&popped));
  return 0;
}

int main(void) {
  CUdevice device;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate_v2(&doomed, 0, device));
  leak_in_doomed_context();
  pthread_t destroyer;
  if (pthread_create(&destroyer, NULL, destroy_doomed, NULL) != 0) return 4;
  while (!destroyed(doomed)) usleep(1000);
  CUcontext fresh = leak_in_new_context(device);
  const int raced = fresh == doomed && !atomic_load(&destroy_returned);
  pthread_join(destroyer, NULL);
  if (raced) printf("handle reused before the destroy returned\n");
  return 0;
}
