// The live allocation records of one process: a concurrent table keyed by address.
//
// Sharded by address so that threads allocating at once rarely share a lock; each shard's
// lock is held only for the map operation itself, never across a driver call or a journal
// write. Insert and remove are O(1) on average.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "api_ids.h"

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
  bool reported = false;  // already counted as a leak by an ended or expired lease
};

class HandleTable {
 public:
  // Inserts `record`; if a record already holds the address (its free was never seen),
  // that record is replaced and returned. `under_lock(stored)` runs while the address's
  // shard is locked, may still adjust the stored record, and whatever it writes is ordered
  // before any later removal of the address.
  template <typename UnderLock>
  std::optional<HandleRecord> insert(const HandleRecord &record, UnderLock under_lock) {
    Shard &shard = shard_for(record.address);
    std::lock_guard lock(shard.mutex);
    auto [it, inserted] = shard.records.try_emplace(record.address, record);
    std::optional<HandleRecord> displaced;
    if (!inserted) {
      displaced = it->second;
      it->second = record;
    }
    under_lock(it->second);
    return displaced;
  }
  std::optional<HandleRecord> insert(const HandleRecord &record) {
    return insert(record, [](HandleRecord &) {});
  }

  // Removes the record of `address`; `under_lock` gets it (or nullptr if there was none)
  // while the shard is still locked.
  template <typename UnderLock>
  std::optional<HandleRecord> remove(uint64_t address, UnderLock under_lock) {
    Shard &shard = shard_for(address);
    std::lock_guard lock(shard.mutex);
    auto it = shard.records.find(address);
    if (it == shard.records.end()) {
      under_lock(static_cast<const HandleRecord *>(nullptr));
      return std::nullopt;
    }
    HandleRecord record = it->second;
    shard.records.erase(it);
    under_lock(&record);
    return record;
  }
  std::optional<HandleRecord> remove(uint64_t address) {
    return remove(address, [](const HandleRecord *) {});
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
    std::unordered_map<uint64_t, HandleRecord> records;
  };
  Shard &shard_for(uint64_t address) {
    // Device addresses are at least 256-byte aligned: mix the bits above that.
    uint64_t mixed = (address >> 8) * 0x9E3779B97F4A7C15ull;
    return shards_[mixed >> 58];
  }
  std::array<Shard, kShards> shards_;
};

}  // namespace leaseguard
