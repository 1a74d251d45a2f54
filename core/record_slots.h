// One shard's records in an open-addressing table: linear probing with backward-shift
// deletion, so no tombstones build up and no node is allocated per record (a malloc and a
// free per allocation + free pair was a sixth of recording it). Not synchronized: the
// shard's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "handle_record.h"

namespace leaseguard {

class RecordSlots {
 public:
  // The record under `key`, or nullptr.
  HandleRecord *find(const HandleKey &key) noexcept {
    if (capacity_ == 0) return nullptr;
    for (size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
      Slot &slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.matches(key)) return &slot.record();
    }
  }

  // The record under `key`, and whether it was just created (holding a default record with
  // the key's address, space and reference). Throws std::bad_alloc if it cannot grow.
  std::pair<HandleRecord *, bool> emplace(const HandleKey &key) {
    if ((count_ + 1) * 4 > capacity_ * 3) grow();
    for (size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
      Slot &slot = slots_[i];
      if (slot.used && slot.matches(key)) return {&slot.record(), false};
      if (!slot.used) {
        slot = Slot{};
        slot.used = true;
        slot.space = key.space;
        slot.address = key.value;
        slot.reference = key.reference;
        ++count_;
        return {&slot.record(), true};
      }
    }
  }

  // Removes the record `found` (a pointer find or emplace returned, not since invalidated).
  void erase(HandleRecord *found) noexcept {
    size_t hole = static_cast<size_t>(static_cast<Slot *>(found) - slots_.get());
    const size_t mask = capacity_ - 1;
    // Backward shift: move each later record of the probe run into the hole if the hole lies
    // between its home and where it sits.
    for (size_t next = (hole + 1) & mask; slots_[next].used; next = (next + 1) & mask) {
      size_t wanted = home(slots_[next].key());
      bool movable = hole <= next ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next);
      if (movable) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole].used = false;
    --count_;
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
  // base's tail padding (HandleRecord is not trivial), so a slot is 64 bytes, not 72.
  struct Slot : HandleRecord {
    Space space = Space::Address;
    bool used = false;
    HandleRecord &record() noexcept { return *this; }
    HandleKey key() const noexcept { return HandleKey{address, space, reference}; }
    bool matches(const HandleKey &key) const noexcept {
      return address == key.value && space == key.space && reference == key.reference;
    }
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");

  size_t home(const HandleKey &key) const noexcept { return HandleKeyHash{}(key) & (capacity_ - 1); }

  void grow() {
    const size_t capacity = capacity_ == 0 ? 16 : capacity_ * 2;
    std::unique_ptr<Slot[]> grown(new Slot[capacity]);  // may throw: nothing is lost then
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const size_t old_capacity = capacity_;
    slots_ = std::move(grown);
    capacity_ = capacity;
    count_ = 0;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (!old[i].used) continue;
      auto [record, created] = emplace(old[i].key());
      (void)created;
      *record = old[i].record();
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t count_ = 0;
};

}  // namespace leaseguard
