/* Calls the C ABI of <leaseguard/leaseguard.h> with nothing allocated and prints each answer.
 * Built twice: against the preload's exports (run under LD_PRELOAD) and linked with the C++
 * API library, which exports the same ABI; both go through one shim (core/session/c_abi.h),
 * so the answers match: with recording off, every call a no-op returning 0. */
#include <stdio.h>

#include <leaseguard/leaseguard.h>

int main(void) {
  leaseguard_lease_t lease = leaseguard_lease_begin("answers", 0, LEASEGUARD_REPORT);
  int entered = leaseguard_lease_enter(lease);
  int left = leaseguard_lease_leave();
  int left_again = leaseguard_lease_leave();
  int leaked = leaseguard_lease_end(lease);
  printf("lease %s, enter %d, leave %d, leave again %d, end %d\n", lease != 0 ? "begun" : "none", entered, left,
         left_again, leaked);
  return 0;
}
