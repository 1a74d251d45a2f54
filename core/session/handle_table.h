// The live allocation records of one process: a concurrent table keyed by what the driver
// handed out (an address, or an opaque handle in its own namespace).
//
// Sharded by value so that threads allocating at once rarely share a lock; each shard's
// lock (a spin lock: it guards a probe of a few dozen instructions) is held only for the
// table operation and the caller's under_lock step, never across a driver call. Insert and
// remove are O(1) on average and allocate nothing once a shard has grown. A value that
// counts references (a VMM handle retained while live) holds one record per reference,
// numbered 0, 1, 2...; a release takes the newest.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "handle_record.h"
#include "record_slots.h"
#include "spin_lock.h"

namespace leaseguard {

class HandleTable {
 public:
  // Inserts `record`; if a record already holds its key (its free was never seen), that
  // record is replaced and returned. With `another_reference`, a live value gets a new
  // reference instead (record.reference is set). `under_lock(stored, displaced)` runs
  // while the shard is locked, with the record replaced if any; it may still adjust the
  // stored record, and whatever it writes is ordered before any later removal of the key.
  template <typename UnderLock>
  std::optional<LiveRecord> insert(const LiveRecord &record, bool another_reference, UnderLock under_lock) {
    HandleKey key = key_of(record);
    Shard &shard = shard_for(key.value);
    std::lock_guard lock(shard.lock);
    if (another_reference)
      while (shard.records.find(key) != nullptr && key.reference < UINT16_MAX) ++key.reference;
    if (key.reference != 0) {
      shard.spaces_with_references |= space_bit(key.space);
      if (key.reference > shard.highest_reference) shard.highest_reference = key.reference;
    }
    // A second reference is remembered where its shard looks for the newest one (remove).
    LG_ASSERT(key.reference == 0 ||
              ((shard.spaces_with_references & space_bit(key.space)) != 0 && key.reference <= shard.highest_reference));
    auto [stored, created] = shard.records.emplace(key);
    LG_ASSERT(created || !another_reference || key.reference == UINT16_MAX);
    std::optional<LiveRecord> displaced;
    if (!created) displaced = *stored;
    *stored = record;
    stored->reference = key.reference;
    under_lock(*stored, displaced);
    return displaced;
  }
  std::optional<LiveRecord> insert(const LiveRecord &record) {
    return insert(record, false, [](LiveRecord &, const std::optional<LiveRecord> &) {});
  }

  // Removes the newest reference to `value` in `space` if `accept(record)` agrees;
  // `under_lock` gets the removed record, or nullptr if there was none, or the record and
  // false if `accept` refused it, while the shard is still locked.
  template <typename Accept, typename UnderLock>
  std::optional<LiveRecord> remove(Space space, uint64_t value, Accept accept, UnderLock under_lock) {
    Shard &shard = shard_for(value);
    std::lock_guard lock(shard.lock);
    HandleKey key{value, space, 0};
    LiveRecord *found = shard.records.find(key);
    if (shard.spaces_with_references != 0 && (shard.spaces_with_references & space_bit(space)) != 0) {
      // The newest reference is the highest number held. Any number may be missing: a lease
      // reclaiming its own references of a handle another lease also holds leaves gaps, and
      // the value is live while any number is held. (Addresses never count references, so
      // their frees never look further than reference 0.)
      for (HandleKey next = key; next.reference < shard.highest_reference;) {
        ++next.reference;
        if (LiveRecord *held = shard.records.find(next)) found = held;
      }
    }
    if (found == nullptr) {
      under_lock(static_cast<const LiveRecord *>(nullptr), true);
      return std::nullopt;
    }
    if (!accept(*found)) {
      under_lock(found, false);
      return std::nullopt;
    }
    LG_ASSERT(found->address == value);  // the key's value, whichever reference
    LiveRecord record = *found;
    shard.records.erase(found);
    under_lock(&record, true);
    return record;
  }
  std::optional<LiveRecord> remove(uint64_t address) {
    return remove(
        Space::Address, address, [](const LiveRecord &) { return true; }, [](const LiveRecord *, bool) {});
  }

  // Marks every unreported record of `lease_id` as reported, calling `marked(record)` for
  // each under its shard's lock; returns how many there were.
  template <typename Marked>
  size_t mark_lease_reported(uint32_t lease_id, Marked marked) {
    size_t count = 0;
    for (Shard &shard : shards_) {
      std::lock_guard lock(shard.lock);
      shard.records.for_each([&](LiveRecord &record) {
        if (record.lease_id == lease_id && !record.reported) {
          record.reported = true;
          marked(static_cast<const LiveRecord &>(record));
          ++count;
        }
      });
    }
    return count;
  }
  size_t mark_lease_reported(uint32_t lease_id) {
    return mark_lease_reported(lease_id, [](const LiveRecord &) {});
  }

  // Calls visit(record) for every record, each under its shard's lock.
  template <typename Visit>
  void for_each(Visit visit) {
    for (Shard &shard : shards_) {
      std::lock_guard lock(shard.lock);
      shard.records.for_each([&](const LiveRecord &record) { visit(record); });
    }
  }

  // Removes every record `take(record)` says to, calling it under the record's shard lock;
  // if it throws, the record it was given stays, and the exception leaves the table as is.
  template <typename Take>
  void extract_if(Take take) {
    for (Shard &shard : shards_) {
      std::lock_guard lock(shard.lock);
      shard.records.remove_where([&](const LiveRecord &record) { return take(record); });
    }
  }

  // Removes every record `predicate` accepts; returns them.
  template <typename Predicate>
  std::vector<LiveRecord> remove_if(Predicate predicate) {
    std::vector<LiveRecord> removed;
    extract_if([&](const LiveRecord &record) {
      if (!predicate(record)) return false;
      removed.push_back(record);
      return true;
    });
    return removed;
  }

  size_t size() const;
  // The memory the records take, slack of the open addressing included.
  size_t memory_bytes() const;

 private:
  static constexpr size_t kShards = 64;
  struct alignas(64) Shard {
    mutable SpinLock lock;
    RecordSlots records;
    uint8_t spaces_with_references = 0;  // namespaces in which some value here held a second reference
    uint16_t highest_reference = 0;      // the highest reference number any value here ever held
  };
  static_assert(static_cast<unsigned>(Space::ExternalMemory) < 8, "a shard keeps one bit per namespace");
  static uint8_t space_bit(Space space) { return static_cast<uint8_t>(1u << static_cast<unsigned>(space)); }
  static_assert(kShards == size_t{1} << (64 - 58), "the shard is the mixed value's top bits");
  Shard &shard_for(uint64_t value) {
    // Every reference to a value shares its shard. Device addresses are at least 256-byte
    // aligned: mix the bits above that (handles are mixed just the same).
    uint64_t mixed = (value >> 8 ^ value) * 0x9E3779B97F4A7C15ull;
    return shards_[mixed >> 58];
  }
  std::array<Shard, kShards> shards_;
};

}  // namespace leaseguard
