/* Outlives its process lease's time-to-live (run with --ttl 250ms): the 6000-byte
 * allocation made before expiry is reported as leaked at expiry; it is freed afterwards (a
 * late free). The 7000-byte allocation made after expiry is still live at exit. */
#include <time.h>

#include "victim.h"

static void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

static VICTIM_NOINLINE CUdeviceptr allocate_before_expiry(void) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 6000));
  return buffer;
}

static VICTIM_NOINLINE void allocate_after_expiry(void) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 7000));
}

int main(void) {
  victim_primary_context();
  CUdeviceptr early = allocate_before_expiry();
  sleep_ms(1200);
  CHECK(cuMemFree_v2(early));
  allocate_after_expiry();
  printf("ttl_expiry done\n");
  return 0;
}
