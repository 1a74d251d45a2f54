// A live allocation as the tracker keeps it, and the key it is found by.
#pragma once

#include <cstdint>

#include "api_ids.h"
#include "resource_rules.h"

namespace leaseguard {

// 60 bytes of fields: with its table slot's two bytes in the tail padding, 64 (record_slots.h).
// That is what a live allocation costs leaseguard besides the table's free slots, whatever its
// stack (stacks are interned once each, in the stack table).
struct HandleRecord {
  uint64_t id = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t time_ns = 0;
  uint64_t context = 0;
  uint32_t lease_id = 0;
  uint32_t epoch = 0;  // the tracker's epoch when the allocation was journaled
  static constexpr uint32_t kNotJournaled = UINT32_MAX;
  uint32_t journal_slot = kNotJournaled;  // where its Alloc record is (a journal has < 2^28 slots)
  Api api = Api::Unknown;
  uint16_t reference = 0;  // which reference to a value that counts references
  int16_t device = 0;
  Kind kind = Kind::Device;
  bool reported = false;  // already counted as a leak by an ended or expired lease
};


struct HandleKey {
  uint64_t value = 0;
  Space space = Space::Address;
  uint16_t reference = 0;
  bool operator==(const HandleKey &) const = default;
};

struct HandleKeyHash {
  size_t operator()(const HandleKey &key) const noexcept {
    return static_cast<size_t>((key.value ^ (uint64_t{key.reference} << 48) ^ (uint64_t(key.space) << 56)) *
                               0x9E3779B97F4A7C15ull >> 16);
  }
};

inline HandleKey key_of(const HandleRecord &record) {
  return HandleKey{record.address, space_of(record.api), record.reference};
}

}  // namespace leaseguard
