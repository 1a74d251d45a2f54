// The C ABI of include/leaseguard/leaseguard.h over the core link (c_abi.h says why here).
#include "c_abi.h"

#include "leaseguard/leaseguard.h"

using leaseguard::front_end_link;

static_assert(LEASEGUARD_CLASSIFY_AT_END == leaseguard::kLeaseClassifyAtEnd, "the core link takes the C ABI's bit");

extern "C" {

__attribute__((visibility("default"))) leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms,
                                                                                 int on_expiry) {
  const int classify = on_expiry & LEASEGUARD_CLASSIFY_AT_END;
  int policy = on_expiry & ~LEASEGUARD_CLASSIFY_AT_END;
  if (policy < LEASEGUARD_REPORT || policy > LEASEGUARD_ABORT) policy = LEASEGUARD_REPORT;
  return front_end_link().lease_begin(name, ttl_ms, policy | classify);
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

__attribute__((visibility("default"))) int leaseguard_check(void) {
  const leaseguard_core_link &link = front_end_link();
  return leaseguard_core_link_has(link, check) ? link.check() : -1;
}

}  // extern "C"
