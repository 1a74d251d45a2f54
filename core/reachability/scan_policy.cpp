// The scan's policy (scan_policy.h).
#include "scan_policy.h"

#include "journal_format.h"

namespace leaseguard::reachability {

size_t node_room_for(size_t heap_blocks, size_t program_mappings, size_t live_allocations) noexcept {
  return heap_blocks + heap_blocks / 16 + program_mappings + 16384 + live_allocations;
}

size_t resident_bytes_for(size_t node_room, uint64_t device_bytes) noexcept {
  return node_room * sizeof(Node) + scratch_bytes(node_room) + device_bytes + (4u << 20);
}

bool fits_in_headroom(size_t needed, uint64_t headroom) noexcept { return needed <= headroom / 2; }

bool lost_is_unchecked(uint32_t flags) noexcept {
  return (flags & (journal::kReachabilityThreadsNotStopped | journal::kReachabilityHeapUntracked |
                   journal::kReachabilityPythonObjectsUnread | journal::kReachabilityPagesUnread)) != 0;
}

Class reported_class(Class found, uint32_t flags) noexcept {
  return lost_is_unchecked(flags) && found != Class::Reachable ? Class::Unchecked : found;
}

}  // namespace leaseguard::reachability
