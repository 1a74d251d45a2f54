// The C ABI of include/leaseguard/leaseguard.h, exported by the preload.
#include "leaseguard/leaseguard.h"

#include "preload_state.h"

using leaseguard::Policy;
using leaseguard::interpose::recording_tracker;

extern "C" {

__attribute__((visibility("default"))) leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms,
                                                                                 int on_expiry) {
  leaseguard::Tracker *tracker = recording_tracker();
  if (tracker == nullptr) return 0;
  if (on_expiry < LEASEGUARD_REPORT || on_expiry > LEASEGUARD_ABORT) on_expiry = LEASEGUARD_REPORT;
  return tracker->lease_begin(name, ttl_ms, static_cast<Policy>(on_expiry));
}

__attribute__((visibility("default"))) int leaseguard_lease_end(leaseguard_lease_t lease) {
  leaseguard::Tracker *tracker = recording_tracker();
  return tracker == nullptr ? 0 : tracker->lease_end(lease);
}

__attribute__((visibility("default"))) int leaseguard_lease_enter(leaseguard_lease_t lease) {
  leaseguard::Tracker *tracker = recording_tracker();
  return tracker == nullptr ? 0 : tracker->lease_enter(lease);
}

__attribute__((visibility("default"))) int leaseguard_lease_leave(void) {
  leaseguard::Tracker *tracker = recording_tracker();
  return tracker == nullptr ? 0 : tracker->lease_leave();
}

}  // extern "C"
