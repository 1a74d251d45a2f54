// The tracker's view of an allocation reported through the core link (core_link.h).
#pragma once

#include "core_link.h"
#include "tracker.h"

namespace leaseguard {

inline AllocationEvent allocation_event_of(const leaseguard_alloc_event &event) noexcept {
  AllocationEvent allocation;
  allocation.api = static_cast<Api>(event.api);
  allocation.kind = static_cast<Kind>(event.kind);
  allocation.address = event.value;
  allocation.bytes = event.bytes;
  allocation.device = event.device;
  allocation.context = event.context;
  allocation.lease_id = event.lease;
  return allocation;
}

// The same, for on_alloc_from: its stack begins at the program's call (pc, sp and bp there).
inline AllocationEvent allocation_event_of(const leaseguard_alloc_event &event, uint64_t caller_pc, uint64_t caller_sp,
                                           uint64_t caller_bp) noexcept {
  AllocationEvent allocation = allocation_event_of(event);
  allocation.caller = WalkStart{caller_pc, caller_sp, caller_bp};
  return allocation;
}

}  // namespace leaseguard
