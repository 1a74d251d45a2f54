// The core's side of core_link.h: the one adapter both front ends record through. The preload
// exports it to the C++ API library of its process (leaseguard_core_link_v1); the API
// library, in a process without the preload, uses its own core's.
#include "core_link.h"

#include "core_link_events.h"
#include "tracker.h"

namespace leaseguard {
namespace {

Tracker *core() noexcept { return Tracker::instance(); }

uint64_t lease_begin(const char *name, uint64_t ttl_ms, int policy) {
  Tracker *tracker = core();
  if (tracker == nullptr) return 0;
  const bool classify_at_end = (policy & kLeaseClassifyAtEnd) != 0;
  policy &= ~kLeaseClassifyAtEnd;
  if (policy < 0 || policy >= static_cast<int>(Policy::Count)) policy = static_cast<int>(Policy::Report);
  return tracker->lease_begin(name, ttl_ms, static_cast<Policy>(policy), classify_at_end);
}

// With no core recording, the lease calls are no-ops that return 0 (c_abi.h): a program
// takes the same path whether leaseguard is absent, disabled, or present.
int lease_end(uint64_t lease) {
  Tracker *tracker = core();
  return tracker == nullptr ? 0 : tracker->lease_end(lease);
}

int lease_state(uint64_t lease) {
  Tracker *tracker = core();
  return static_cast<int>(tracker == nullptr ? LeaseState::Unknown : tracker->lease_state(lease));
}

int lease_enter(uint64_t lease) {
  Tracker *tracker = core();
  return tracker == nullptr ? 0 : tracker->lease_enter(lease);
}

int lease_leave() {
  Tracker *tracker = core();
  return tracker == nullptr ? 0 : tracker->lease_leave();
}

// Nothing recording: there is nothing to check, and saying 0 would claim a check was made.
int check() {
  Tracker *tracker = core();
  return tracker == nullptr ? -1 : tracker->check_now();
}

void on_alloc(const leaseguard_alloc_event *event) {
  Tracker *tracker = core();
  if (tracker != nullptr && event != nullptr) tracker->on_alloc(allocation_event_of(*event));
}

void on_alloc_from(const leaseguard_alloc_event *event, uint64_t caller_pc, uint64_t caller_sp, uint64_t caller_bp) {
  Tracker *tracker = core();
  if (tracker != nullptr && event != nullptr)
    tracker->on_alloc(allocation_event_of(*event, caller_pc, caller_sp, caller_bp));
}

int on_free(uint16_t api, uint64_t value) {
  Tracker *tracker = core();
  return static_cast<int>(tracker == nullptr ? FreeOutcome::Unknown : tracker->on_free(api_from_wire(api), value));
}

int on_owner_drop(uint16_t api, uint64_t value) {
  Tracker *tracker = core();
  return static_cast<int>(tracker == nullptr ? FreeOutcome::Unknown
                                             : tracker->on_free(api_from_wire(api), value, true));
}

void exclude_code(uint64_t begin, uint64_t end) {
  if (Tracker *tracker = core()) tracker->exclude_code(CodeRange{begin, end});
}

}  // namespace

leaseguard_core_link core_link(void *(*real_function)(void *driver_handle, const char *name)) noexcept {
  return leaseguard_core_link{1,
                              sizeof(leaseguard_core_link),
                              real_function,
                              lease_begin,
                              lease_end,
                              lease_state,
                              on_alloc,
                              on_free,
                              exclude_code,
                              on_owner_drop,
                              on_alloc_from,
                              lease_enter,
                              lease_leave,
                              check};
}

}  // namespace leaseguard
