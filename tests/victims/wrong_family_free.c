/* Frees by the wrong family's entry point, and one true double free, with nothing leaked:
 *   a host buffer registered, unregistered, then given to cuMemFreeHost (which frees only
 *   cuMemAllocHost's memory): a wrong-family free of a value already freed by its own family;
 *   a host buffer given to cuMemFreeHost while it is registered (the registration stays
 *   live; the driver refuses), then unregistered: a wrong-family free of a live value;
 *   a device allocation freed twice with cuMemFree: a double free.
 * The driver's answers to the wrong frees are not checked: they are the driver's to give. */
#include "victim.h"

static char g_registered_then_freed[8192] __attribute__((aligned(4096)));
static char g_still_registered[8192] __attribute__((aligned(4096)));

static VICTIM_NOINLINE void free_host_after_unregister(void) {
  CHECK(cuMemHostRegister_v2(g_registered_then_freed, sizeof g_registered_then_freed, 0));
  CHECK(cuMemHostUnregister(g_registered_then_freed));
  (void)cuMemFreeHost(g_registered_then_freed);
}

static VICTIM_NOINLINE void free_host_while_registered(void) {
  CHECK(cuMemHostRegister_v2(g_still_registered, sizeof g_still_registered, 0));
  (void)cuMemFreeHost(g_still_registered);
  CHECK(cuMemHostUnregister(g_still_registered));
}

static VICTIM_NOINLINE void free_device_twice(void) {
  CUdeviceptr twice;
  CHECK(cuMemAlloc_v2(&twice, 512));
  CHECK(cuMemFree_v2(twice));
  (void)cuMemFree_v2(twice);
}

int main(void) {
  victim_primary_context();
  free_host_after_unregister();
  free_host_while_registered();
  free_device_twice();
  return 0;
}
