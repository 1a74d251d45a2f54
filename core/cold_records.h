// The side store for the fields the live table does not keep (handle_record.h), for the
// allocations whose journal record cannot hold them: the journal could not be opened, or it
// dropped the record (it is full). Rare by design, but then it is on every allocation's
// path for the rest of the process: so sharded, each thread keeping what it allocates in a
// shard of its own choosing (a vector of entries with a free list, under a mutex), so that
// threads allocating at once do not queue on one lock. Its memory follows the live set, not
// the allocations ever made.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "handle_record.h"

namespace leaseguard {

class ColdRecords {
 public:
  // Keeps `fields`; returns where (a LiveRecord::where: kColdBit, the shard, the index in
  // it), or LiveRecord::kNowhere if out of memory.
  uint32_t put(const ColdFields &fields) noexcept;
  // The fields kept at `where` (which put returned and release has not yet been given).
  ColdFields get(uint32_t where) const noexcept;
  void release(uint32_t where) noexcept;

  size_t memory_bytes() const;

  static constexpr unsigned kShardBits = 4;
  static constexpr unsigned kIndexBits = 31 - kShardBits;
  // One less than the index bits allow: kNowhere (every bit set) is never a place.
  static constexpr uint32_t kIndexLimit = (1u << kIndexBits) - 1;

 private:
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::vector<ColdFields> fields;
    std::vector<uint32_t> free;
  };
  static uint32_t shard_of(uint32_t where) noexcept { return (where & ~LiveRecord::kColdBit) >> kIndexBits; }
  static uint32_t index_of(uint32_t where) noexcept { return where & ((1u << kIndexBits) - 1); }
  std::array<Shard, 1u << kShardBits> shards_;
};

}  // namespace leaseguard
