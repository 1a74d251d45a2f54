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

class SideStore {
 public:
  // Keeps `fields`; returns where they are (a LiveRecord::details_at: kInSideStoreBit, the shard, the index in
  // it), or LiveRecord::kNowhere if out of memory.
  uint32_t put(const AllocationDetails &fields) noexcept;
  // The fields kept at `details_at` (which put returned and release has not yet been given).
  AllocationDetails get(uint32_t details_at) const noexcept;
  void release(uint32_t details_at) noexcept;

  size_t memory_bytes() const;

  static constexpr unsigned kShardBits = 4;
  static constexpr unsigned kIndexBits = 31 - kShardBits;
  // One less than the index bits allow: kNowhere (every bit set) is never a place.
  static constexpr uint32_t kIndexLimit = (1u << kIndexBits) - 1;

 private:
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::vector<AllocationDetails> fields;
    std::vector<uint32_t> free;
  };
  static uint32_t shard_of(uint32_t details_at) noexcept {
    return (details_at & ~LiveRecord::kInSideStoreBit) >> kIndexBits;
  }
  static uint32_t index_of(uint32_t details_at) noexcept { return details_at & ((1u << kIndexBits) - 1); }
  std::array<Shard, 1u << kShardBits> shards_;
};

}  // namespace leaseguard
