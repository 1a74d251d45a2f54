/* One thread resets the device. Before that reset returns (the simulator lingers in it after
 * the memory is gone: LEASEGUARD_SIM_DESTROY_LINGER_MS), the main thread allocates on the
 * device again and leaks that. The new leak is not the reset's and must be reported when the
 * process exits; the leak made before the reset is reported as gone with it.
 * Prints "allocated before the reset returned" when that is what happened, so the test knows
 * it tested that. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "hip_victim.h"

static atomic_int reset_returned;

static void *reset_device(void *unused) {
  (void)unused;
  CHECK(hipDeviceReset());
  atomic_store(&reset_returned, 1);
  return NULL;
}

static NOINLINE void *leak_before_reset(void) {
  void *gone;
  CHECK(hipMalloc(&gone, 3000));
  return gone;
}

static NOINLINE void leak_after_reset(void) {
  void *kept;
  CHECK(hipMalloc(&kept, 7000));
}

int main(void) {
  void *gone = leak_before_reset();
  pthread_t resetter;
  if (pthread_create(&resetter, NULL, reset_device, NULL) != 0) return 4;
  /* The reset has freed the device's memory once the old allocation's range is unknown. */
  hipDeviceptr_t base;
  size_t size;
  while (hipMemGetAddressRange(&base, &size, gone) == hipSuccess) usleep(1000);
  leak_after_reset();
  const int raced = !atomic_load(&reset_returned);
  pthread_join(resetter, NULL);
  if (raced) printf("allocated before the reset returned\n");
  return 0;
}
