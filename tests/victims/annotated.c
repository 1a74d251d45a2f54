/* Marks a lease with <leaseguard/annotate.h> only, linking no leaseguard library: without
 * the preload every annotation is a no-op that yields 0, and the program runs the same;
 * under the preload the lease "annotated" owns the 4321-byte leak and its end returns 1.
 * Prints what the annotations returned. */
#include <leaseguard/annotate.h>

#include "victim.h"

static VICTIM_NOINLINE void leak_in_scope(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 4321));
}

int main(void) {
  victim_primary_context();
  leaseguard_lease_t lease = LEASEGUARD_LEASE_BEGIN("annotated", 0, LEASEGUARD_REPORT);
  int entered = LEASEGUARD_LEASE_ENTER(lease);
  leak_in_scope();
  int left = LEASEGUARD_LEASE_LEAVE();
  int leaked = LEASEGUARD_LEASE_END(lease);
  printf("lease %s, enter %d, leave %d, end %d\n", lease != 0 ? "begun" : "none", entered, left, leaked);
  return 0;
}
