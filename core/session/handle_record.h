// A live allocation as the tracker keeps it, and the key it is found by.
//
// The table keeps only what frees, lease ends and context destroys decide by (LiveRecord,
// 32 bytes). The rest of what is known about an allocation (its id, time, context, size,
// device and kind: AllocationDetails) is written once and read rarely, so it is not kept twice: it
// is read back from the allocation's journal record, or, for an allocation that could not
// be journaled, from the tracker's small side store (side_store.h). HandleRecord is both
// together: what a reclaim backend is handed.
#pragma once

#include <cstdint>

#include "api_ids.h"
#include "resource_rules.h"

namespace leaseguard {

struct LiveRecord {
  uint64_t address = 0;
  // Where the allocation's other fields are: a journal slot (a journal has < 2^28 of them),
  // or kInSideStoreBit | an index into the side store, or kNowhere if neither could take them.
  static constexpr uint32_t kInSideStoreBit = 1u << 31;
  static constexpr uint32_t kNowhere = UINT32_MAX;
  uint32_t details_at = kNowhere;
  uint32_t lease_id = 0;
  uint32_t barrier = 0;  // the tracker's barrier count when the allocation was recorded
  Api api = Api::Unknown;
  uint16_t reference = 0;  // which reference to a value that counts references
  bool reported = false;   // already counted as a leak by an ended or expired lease

  bool in_journal() const noexcept { return details_at < kInSideStoreBit; }  // then never in_side_store()
  bool in_side_store() const noexcept { return details_at != kNowhere && (details_at & kInSideStoreBit) != 0; }
};
// 25 bytes of fields; the table's slot keeps its namespace and occupancy in the tail padding
// (record_slots.h), so a live allocation costs 32 bytes besides the table's free slots.
static_assert(sizeof(LiveRecord) == 32);

// What the table does not keep (see above).
struct AllocationDetails {
  uint64_t id = 0;
  uint64_t bytes = 0;
  uint64_t time_ns = 0;
  uint64_t context = 0;
  int16_t device = 0;
  Kind kind = Kind::Device;
};

// Everything known about a live allocation.
struct HandleRecord : LiveRecord, AllocationDetails {};

struct HandleKey {
  uint64_t value = 0;
  Space space = Space::Address;
  uint16_t reference = 0;
  bool operator==(const HandleKey &) const = default;
};

struct HandleKeyHash {
  size_t operator()(const HandleKey &key) const noexcept {
    return static_cast<size_t>(
        (key.value ^ (uint64_t{key.reference} << 48) ^ (uint64_t(key.space) << 56)) * 0x9E3779B97F4A7C15ull >> 16);
  }
};

inline HandleKey key_of(const LiveRecord &record) {
  return HandleKey{record.address, space_of(record.api), record.reference};
}

}  // namespace leaseguard
