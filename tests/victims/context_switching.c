/* The calling thread's current context changes in every way the driver API has, and each
 * change is followed by a leak whose device the report must name: set current, push and pop
 * (both generations of each name), create (which pushes), destroy (which pops), a primary
 * context reset, and another thread's destroy of the context that is current here, whose
 * handle a new context on the other device then gets (LEASEGUARD_SIM_REUSE_CONTEXTS=1), so
 * this thread's current context changes device without this thread calling anything.
 * Two devices (LEASEGUARD_SIM_DEVICES=2). Each leak has its own function and size; the test
 * checks the device of each. Prints "handle reused by another thread" when the last case
 * happened as described, so the test knows it tested that. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "victim.h"

/* One function per case, each allocating itself, so each leak's first frame names its case. */
#define LEAK_CASE(name, bytes)             \
  static VICTIM_NOINLINE void name(void) { \
    CUdeviceptr kept;                      \
    CHECK(cuMemAlloc_v2(&kept, bytes));    \
  }
LEAK_CASE(leak_in_primary_0, 1001)
LEAK_CASE(leak_after_set_current_1, 1002)
LEAK_CASE(leak_after_push_0, 1003)
LEAK_CASE(leak_after_pop_1, 1004)
LEAK_CASE(leak_after_legacy_push_0, 1005)
LEAK_CASE(leak_after_legacy_pop_1, 1006)
LEAK_CASE(leak_after_create_0, 1007)
LEAK_CASE(leak_after_destroy_1, 1008)
LEAK_CASE(leak_before_reset_1, 1009)
LEAK_CASE(leak_after_reset_1, 1010)
LEAK_CASE(leak_in_other_thread_0, 1011)
LEAK_CASE(leak_after_other_thread_1, 1012)
LEAK_CASE(leak_before_handle_reused_0, 1013)
LEAK_CASE(leak_after_handle_reused_1, 1014)

static CUcontext primary[2];
static CUcontext shared_handle;
static CUcontext reborn;

static void *allocate_on_device_0(void *unused) {
  (void)unused;
  CHECK(cuCtxSetCurrent(primary[0]));
  leak_in_other_thread_0();
  return NULL;
}

/* Destroys the context current on the main thread and makes one on device 1, which gets its
 * handle; made current here only for the moment of its creation. */
static void *destroy_and_make_again(void *unused) {
  (void)unused;
  CHECK(cuCtxDestroy_v2(shared_handle));
  CHECK(cuCtxCreate_v2(&reborn, 0, 1));
  CUcontext popped;
  CHECK(cuCtxPopCurrent_v2(&popped));
  return NULL;
}

static void run_thread(void *(*body)(void *)) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, body, NULL) != 0 || pthread_join(thread, NULL) != 0) exit(4);
}

int main(void) {
  CHECK(cuInit(0));
  for (int device = 0; device < 2; ++device) CHECK(cuDevicePrimaryCtxRetain(&primary[device], device));
  CUresult (*legacy_push)(CUcontext) = (CUresult(*)(CUcontext))dlsym(RTLD_DEFAULT, "cuCtxPushCurrent");
  CUresult (*legacy_pop)(CUcontext *) = (CUresult(*)(CUcontext *))dlsym(RTLD_DEFAULT, "cuCtxPopCurrent");
  if (legacy_push == NULL || legacy_pop == NULL) return 5;
  CUcontext popped;

  CHECK(cuCtxSetCurrent(primary[0]));
  leak_in_primary_0();
  CHECK(cuCtxSetCurrent(primary[1]));
  leak_after_set_current_1();
  CHECK(cuCtxPushCurrent_v2(primary[0]));
  leak_after_push_0();
  CHECK(cuCtxPopCurrent_v2(&popped));
  leak_after_pop_1();
  CHECK(legacy_push(primary[0]));
  leak_after_legacy_push_0();
  CHECK(legacy_pop(&popped));
  leak_after_legacy_pop_1();

  CUcontext created;
  CHECK(cuCtxCreate_v2(&created, 0, 0));
  leak_after_create_0();
  CHECK(cuCtxDestroy_v2(created)); /* pops it: primary 1 is current again */
  leak_after_destroy_1();

  /* A reset destroys the primary context and its memory; retained again, it is current
   * again on this thread, whose current handle is still the primary's (no call here sets
   * it). */
  leak_before_reset_1();
  CHECK(cuDevicePrimaryCtxReset_v2(1));
  CUcontext again;
  CHECK(cuDevicePrimaryCtxRetain(&again, 1));
  if (again != primary[1]) return 6;
  leak_after_reset_1();

  /* Another thread's current context is its own. */
  run_thread(allocate_on_device_0);
  leak_after_other_thread_1();

  /* Another thread destroys this thread's current context and a context on device 1 gets
   * its handle: this thread's current context is now that one. */
  CHECK(cuCtxCreate_v2(&shared_handle, 0, 0));
  leak_before_handle_reused_0();
  run_thread(destroy_and_make_again);
  if (reborn == shared_handle) {
    printf("handle reused by another thread\n");
    leak_after_handle_reused_1();
  }
  return 0;
}
