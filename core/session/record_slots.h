// One shard's records in an open-addressing table: linear probing with backward-shift
// deletion, so no tombstones build up and no node is allocated per record (a malloc and a
// free per allocation + free pair was a sixth of recording it). Not synchronized: the
// shard's lock guards it.
//
// Memory is what this table is sized by: a slot is 32 bytes, the table is at most 80% full,
// and it grows by 3/2 and 4/3 in turn (8, 12, 16, 24, 32...) instead of doubling, so it is
// never less than 53% full once grown: at most 60 bytes per live record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "handle_record.h"
#include "lg_assert.h"

namespace leaseguard {

class RecordSlots {
 public:
  // The record under `key`, or nullptr.
  LiveRecord *find(const HandleKey &key) noexcept {
    if (capacity_ == 0) return nullptr;
    LG_ASSERT(count_ < capacity_);  // a free slot ends every probe
    for (size_t i = home(key);; i = next(i)) {
      Slot &slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.matches(key)) return &slot.record();
    }
  }

  // The record under `key`, and whether it was just created (holding a default record with
  // the key's address, space and reference). Throws std::bad_alloc if it cannot grow.
  std::pair<LiveRecord *, bool> emplace(const HandleKey &key) {
    if ((count_ + 1) * 5 > capacity_ * 4) grow();
    LG_ASSERT((count_ + 1) * 5 <= capacity_ * 4);  // at most 80% full, with this one
    LG_ASSERT(capacity_is_a_size_grown_to());
    for (size_t i = home(key);; i = next(i)) {
      Slot &slot = slots_[i];
      if (slot.used && slot.matches(key)) return {&slot.record(), false};
      if (!slot.used) {
        // Field by field, not `slot = Slot{}`: a whole slot built on the stack and copied
        // is read back with wide loads that the stack's narrower stores cannot forward to,
        // a stall of ~15 cycles in every allocation (perf, 2026-12-06).
        slot.address = key.value;
        slot.details_at = LiveRecord::kNowhere;
        slot.lease_id = 0;
        slot.barrier = 0;
        slot.api = Api::Unknown;
        slot.reference = key.reference;
        slot.reported = false;
        slot.space = key.space;
        slot.used = true;
        ++count_;
        LG_ASSERT(slot.matches(key) && home(key) < capacity_);
        return {&slot.record(), true};
      }
    }
  }

  // Removes the record `found` (a pointer find or emplace returned, not since invalidated).
  void erase(LiveRecord *found) noexcept {
    size_t hole = static_cast<size_t>(static_cast<Slot *>(found) - slots_.get());
    LG_ASSERT(hole < capacity_ && slots_[hole].used && count_ > 0);  // a record find or emplace returned
    // Backward shift: move each later record of the probe run into the hole if the hole lies
    // between its home and where it sits (cyclically).
    for (size_t later = next(hole); slots_[later].used; later = next(later)) {
      size_t wanted = home(slots_[later].key());
      bool movable = hole <= later ? (wanted <= hole || wanted > later) : (wanted <= hole && wanted > later);
      if (movable) {
        slots_[hole] = slots_[later];
        hole = later;
      }
    }
    slots_[hole].used = false;
    --count_;
    LG_ASSERT(count_ < capacity_);
  }

  // Calls visit(record) for every record.
  template <typename Visit>
  void for_each(Visit visit) {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].used) visit(slots_[i].record());
  }

  // Calls visit(record) for every record; visit returns true to remove it.
  template <typename Visit>
  void remove_where(Visit visit) {
    for (size_t i = 0; i < capacity_;) {
      if (slots_[i].used && visit(slots_[i].record())) {
        erase(&slots_[i].record());  // a later record may have moved here: look again
        continue;
      }
      ++i;
    }
  }

  size_t size() const noexcept { return count_; }
  size_t memory_bytes() const noexcept { return capacity_ * sizeof(Slot); }

 private:
  // Derived, not composed: the Itanium C++ ABI lays a derived class's members into its
  // base's tail padding (LiveRecord is not trivial), so a slot is 32 bytes, not 40.
  struct Slot : LiveRecord {
    Space space = Space::Address;
    bool used = false;
    LiveRecord &record() noexcept { return *this; }
    HandleKey key() const noexcept { return HandleKey{address, space, reference}; }
    bool matches(const HandleKey &key) const noexcept {
      return address == key.value && space == key.space && reference == key.reference;
    }
  };
  static_assert(sizeof(Slot) == 32, "a slot is half a cache line");

  // The key's home slot: its hash scaled to the capacity (which need not be a power of two)
  // by a multiply, not a division. The scaling takes the hash's high bits. One multiply by
  // an odd constant makes each of them depend on every bit below it, and folding the high
  // half down first brings in the bits above: enough for addresses, which differ in their
  // middle bits, and for handles.
  size_t home(const HandleKey &key) const noexcept {
    uint64_t h = key.value ^ (uint64_t{key.reference} << 48) ^ (uint64_t(key.space) << 56);
    h = (h ^ h >> 29) * 0xD6E8FEB86659FD93ull;
    return static_cast<size_t>(static_cast<unsigned __int128>(h) * capacity_ >> 64);
  }
  size_t next(size_t i) const noexcept {
    LG_ASSERT(i < capacity_);
    return i + 1 == capacity_ ? 0 : i + 1;
  }
  // 0, 8, or a power of two or 3/2 of one from there (grow's sizes).
  bool capacity_is_a_size_grown_to() const noexcept {
    const size_t power = (capacity_ & (capacity_ - 1)) == 0 ? capacity_ : capacity_ / 3 * 2;
    return capacity_ == 0 ||
           (capacity_ >= 8 && (power & (power - 1)) == 0 && (capacity_ == power || power * 3 / 2 == capacity_));
  }

  void grow() {
    // 8, 12, 16, 24, 32, 48...: from a power of two by 3/2, from the size between by 4/3.
    const size_t capacity = capacity_ == 0                       ? 8
                            : (capacity_ & (capacity_ - 1)) == 0 ? capacity_ / 2 * 3
                                                                 : capacity_ / 3 * 4;
    LG_ASSERT(capacity > capacity_ && count_ * 5 < capacity * 4);
    std::unique_ptr<Slot[]> grown(new Slot[capacity]);  // may throw: nothing is lost then
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const size_t old_capacity = capacity_;
    [[maybe_unused]] const size_t old_count = count_;
    slots_ = std::move(grown);
    capacity_ = capacity;
    count_ = 0;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (!old[i].used) continue;
      auto [record, created] = emplace(old[i].key());
      (void)created;
      *record = old[i].record();
    }
    LG_ASSERT(count_ == old_count);  // every record moved, none twice
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;  // 0, a power of two, or 3/2 of one
  size_t count_ = 0;
};

}  // namespace leaseguard
