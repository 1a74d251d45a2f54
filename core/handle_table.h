// The live allocation records of one process: a concurrent table keyed by what the driver
// handed out (an address, or an opaque handle in its own namespace).
//
// Sharded by value so that threads allocating at once rarely share a lock; each shard's
// lock is held only for the map operation itself, never across a driver call or a journal
// write. Insert and remove are O(1) on average. A value that counts references (a VMM handle
// retained while live) holds one record per reference, numbered 0, 1, 2...; a release takes
// the newest.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

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
  uint32_t thread = 0;
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

class HandleTable {
 public:
  // Inserts `record`; if a record already holds its key (its free was never seen), that
  // record is replaced and returned. With `another_reference`, a live value gets a new
  // reference instead (record.reference is set). `under_lock(stored)` runs while the
  // shard is locked, may still adjust the stored record, and whatever it writes is ordered
  // before any later removal of the key.
  template <typename UnderLock>
  std::optional<HandleRecord> insert(const HandleRecord &record, bool another_reference, UnderLock under_lock) {
    HandleKey key = key_of(record);
    Shard &shard = shard_for(key.value);
    std::lock_guard lock(shard.mutex);
    if (another_reference)
      while (shard.records.count(key) != 0 && key.reference < UINT16_MAX) ++key.reference;
    auto [it, inserted] = shard.records.try_emplace(key, record);
    std::optional<HandleRecord> displaced;
    if (!inserted) {
      displaced = it->second;
      it->second = record;
    }
    it->second.reference = key.reference;
    under_lock(it->second);
    return displaced;
  }
  std::optional<HandleRecord> insert(const HandleRecord &record) {
    return insert(record, false, [](HandleRecord &) {});
  }

  // Removes the newest reference to `value` in `space` if `accept(record)` agrees;
  // `under_lock` gets the removed record, or nullptr if there was none, or the record and
  // false if `accept` refused it, while the shard is still locked.
  template <typename Accept, typename UnderLock>
  std::optional<HandleRecord> remove(Space space, uint64_t value, Accept accept, UnderLock under_lock) {
    Shard &shard = shard_for(value);
    std::lock_guard lock(shard.mutex);
    HandleKey key{value, space, 0};
    auto it = shard.records.find(key);
    if (it == shard.records.end()) {
      under_lock(static_cast<const HandleRecord *>(nullptr), true);
      return std::nullopt;
    }
    for (HandleKey next = key; next.reference < UINT16_MAX;) {  // the newest reference
      ++next.reference;
      auto newer = shard.records.find(next);
      if (newer == shard.records.end()) break;
      it = newer;
    }
    if (!accept(it->second)) {
      under_lock(&it->second, false);
      return std::nullopt;
    }
    HandleRecord record = it->second;
    shard.records.erase(it);
    under_lock(&record, true);
    return record;
  }
  std::optional<HandleRecord> remove(uint64_t address) {
    return remove(Space::Address, address, [](const HandleRecord &) { return true; },
                  [](const HandleRecord *, bool) {});
  }

  // Marks every unreported record of `lease_id` as reported; returns how many there were.
  size_t mark_lease_reported(uint32_t lease_id);

  // Removes every record `predicate` accepts; returns them.
  template <typename Predicate>
  std::vector<HandleRecord> remove_if(Predicate predicate) {
    std::vector<HandleRecord> removed;
    for (Shard &shard : shards_) {
      std::lock_guard lock(shard.mutex);
      for (auto it = shard.records.begin(); it != shard.records.end();) {
        if (predicate(it->second)) {
          removed.push_back(it->second);
          it = shard.records.erase(it);
        } else {
          ++it;
        }
      }
    }
    return removed;
  }

  size_t size() const;

 private:
  static constexpr size_t kShards = 64;
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::unordered_map<HandleKey, HandleRecord, HandleKeyHash> records;
  };
  Shard &shard_for(uint64_t value) {
    // Every reference to a value shares its shard. Device addresses are at least 256-byte
    // aligned: mix the bits above that (handles are mixed just the same).
    uint64_t mixed = (value >> 8 ^ value) * 0x9E3779B97F4A7C15ull;
    return shards_[mixed >> 58];
  }
  std::array<Shard, kShards> shards_;
};

}  // namespace leaseguard
