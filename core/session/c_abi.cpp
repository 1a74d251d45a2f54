// The C ABI of include/leaseguard/leaseguard.h over the core link (c_abi.h says why here).
#include "c_abi.h"

#include "leaseguard/leaseguard.h"

using leaseguard::front_end_link;

extern "C" {

__attribute__((visibility("default"))) leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms,
                                                                                 int on_expiry) {
  if (on_expiry < LEASEGUARD_REPORT || on_expiry > LEASEGUARD_ABORT) on_expiry = LEASEGUARD_REPORT;
  return front_end_link().lease_begin(name, ttl_ms, on_expiry);
}

__attribute__((visibility("default"))) int leaseguard_lease_end(leaseguard_lease_t lease) {
  return front_end_link().lease_end(lease);
}

// A provider from before lease_enter and lease_leave (an older preload) records, but cannot
// move a thread into a lease: that is a refusal, not a no-op.
__attribute__((visibility("default"))) int leaseguard_lease_enter(leaseguard_lease_t lease) {
  const leaseguard_core_link &link = front_end_link();
  return leaseguard_core_link_has(link, lease_enter) ? link.lease_enter(lease) : -1;
}

__attribute__((visibility("default"))) int leaseguard_lease_leave(void) {
  const leaseguard_core_link &link = front_end_link();
  return leaseguard_core_link_has(link, lease_leave) ? link.lease_leave() : -1;
}

}  // extern "C"
