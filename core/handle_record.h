// A live allocation as the tracker keeps it, and the key it is found by.
#pragma once

#include <cstdint>

#include "api_ids.h"
#include "resource_rules.h"

namespace leaseguard {

struct HandleRecord {
  uint64_t id = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t time_ns = 0;
  uint64_t context = 0;
  uint32_t stack_id = 0;
  uint32_t lease_id = 0;
  int32_t device = 0;
  Api api = Api::Unknown;
  Kind kind = Kind::Device;
  uint16_t reference = 0;  // which reference to a value that counts references
  bool reported = false;  // already counted as a leak by an ended or expired lease
  uint32_t epoch = 0;     // the tracker's epoch when the allocation was journaled
  uint64_t journal_slot = UINT64_MAX;  // where its Alloc record is (UINT64_MAX: not journaled)
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
