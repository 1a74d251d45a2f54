// The C ABI of include/leaseguard/leaseguard.h, exported by the API library too, so that a
// program that links leaseguard::api (or `pkg-config --libs leaseguard`) instead of being
// preloaded has it. With the preload loaded, the preload's definitions come first in the
// process's symbol lookup and these are never reached; either way the calls land in the
// process's one core (core_access.h).
#include "leaseguard/leaseguard.h"

#include "core_access.h"

using leaseguard::api::core;

extern "C" {

__attribute__((visibility("default"))) leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms,
                                                                                 int on_expiry) {
  if (on_expiry < LEASEGUARD_REPORT || on_expiry > LEASEGUARD_ABORT) on_expiry = LEASEGUARD_REPORT;
  return core().lease_begin(name, ttl_ms, on_expiry);
}

__attribute__((visibility("default"))) int leaseguard_lease_end(leaseguard_lease_t lease) {
  return core().lease_end(lease);
}

__attribute__((visibility("default"))) int leaseguard_lease_enter(leaseguard_lease_t lease) {
  const leaseguard_core_link &link = core();
  return leaseguard_core_link_has(link, lease_enter) ? link.lease_enter(lease) : -1;
}

__attribute__((visibility("default"))) int leaseguard_lease_leave(void) {
  const leaseguard_core_link &link = core();
  return leaseguard_core_link_has(link, lease_leave) ? link.lease_leave() : -1;
}

}  // extern "C"
