// The preload's side of core/core_link.h: the C++ API records into this process's core.
#include <dlfcn.h>

#include "core_link.h"
#include "core_link_events.h"
#include "hook_table.h"
#include "preload_state.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

void *real_function_of(void *driver_handle, const char *name) {
  if (driver_handle == nullptr || name == nullptr) return nullptr;
  // The C library's dlsym: leaseguard's own would hand back the hook for a hooked name.
  void *function = real_dlsym()(driver_handle, name);
  const Api hook = find_hook(name);
  if (function != nullptr && hook != Api::Unknown) remember_real(hook, function);
  return function;
}

uint64_t lease_begin(const char *name, uint64_t ttl_ms, int policy) {
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr) return 0;
  if (policy < 0 || policy >= static_cast<int>(Policy::Count)) policy = static_cast<int>(Policy::Report);
  return tracker->lease_begin(name, ttl_ms, static_cast<Policy>(policy));
}

int lease_end(uint64_t lease) {
  Tracker *tracker = recording_tracker();
  return tracker == nullptr ? -1 : tracker->lease_end(lease);
}

int lease_state(uint64_t lease) {
  Tracker *tracker = recording_tracker();
  return static_cast<int>(tracker == nullptr ? LeaseState::Unknown : tracker->lease_state(lease));
}

void on_alloc(const leaseguard_alloc_event *event) {
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr || event == nullptr) return;
  tracker->on_alloc(allocation_event_of(*event));
}

void on_alloc_from(const leaseguard_alloc_event *event, uint64_t caller_pc, uint64_t caller_sp, uint64_t caller_bp) {
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr || event == nullptr) return;
  tracker->on_alloc(allocation_event_of(*event, caller_pc, caller_sp, caller_bp));
}

int on_free(uint16_t api, uint64_t value) {
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr) return 1;
  return static_cast<int>(tracker->on_free(static_cast<Api>(api), value));
}

int on_owner_drop(uint16_t api, uint64_t value) {
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr) return 1;
  return static_cast<int>(tracker->on_free(static_cast<Api>(api), value, true));
}

void exclude_code(uint64_t begin, uint64_t end) {
  if (Tracker *tracker = recording_tracker()) tracker->exclude_code(CodeRange{begin, end});
}

const leaseguard_core_link kLink = {1, sizeof(leaseguard_core_link), real_function_of, lease_begin, lease_end,
                                    lease_state, on_alloc, on_free, exclude_code, on_owner_drop, on_alloc_from};

}  // namespace
}  // namespace leaseguard::interpose

extern "C" __attribute__((visibility("default"))) const leaseguard_core_link *leaseguard_core_link_v1(void) {
  return leaseguard::interpose::recording_tracker() != nullptr ? &leaseguard::interpose::kLink : nullptr;
}
