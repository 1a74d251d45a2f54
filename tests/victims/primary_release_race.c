/* One thread releases the last reference to the device's primary context. Before that
 * release returns (the simulator lingers in it after the context is gone:
 * LEASEGUARD_SIM_DESTROY_LINGER_MS), the main thread retains the primary again, which makes
 * a new primary context under the same handle, and leaks in it. The release destroyed the
 * first primary, so its leak is reported as gone with it; the new one's leak is reported
 * when the process exits.
 * Prints "primary made again before the release returned" when that is what happened, so
 * the test knows it tested that. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "victim.h"

static CUdevice device;
static atomic_int release_returned;

static void *release_last_reference(void *unused) {
  (void)unused;
  CHECK(cuDevicePrimaryCtxRelease_v2(device));
  atomic_store(&release_returned, 1);
  return NULL;
}

static VICTIM_NOINLINE void leak_in_first_primary(void) {
  CUdeviceptr gone;
  CHECK(cuMemAlloc_v2(&gone, 3000));
}

static VICTIM_NOINLINE void leak_in_primary_made_again(void) {
  CUdeviceptr kept;
  CHECK(cuMemAlloc_v2(&kept, 7000));
}

static int primary_active(void) {
  unsigned flags;
  int active;
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  return active;
}

int main(void) {
  CUcontext primary;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  CHECK(cuCtxSetCurrent(primary));
  leak_in_first_primary();
  pthread_t releaser;
  if (pthread_create(&releaser, NULL, release_last_reference, NULL) != 0) return 4;
  while (primary_active()) usleep(1000);
  CUcontext again;
  CHECK(cuDevicePrimaryCtxRetain(&again, device));
  CHECK(cuCtxSetCurrent(again));
  leak_in_primary_made_again();
  const int raced = !atomic_load(&release_returned);
  pthread_join(releaser, NULL);
  if (raced) printf("primary made again before the release returned\n");
  return 0;
}
