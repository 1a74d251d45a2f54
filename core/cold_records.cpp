// Implementation of the side store for fields the journal could not take.
#include "cold_records.h"

namespace leaseguard {

uint32_t ColdRecords::put(const ColdFields &fields) noexcept {
  std::lock_guard lock(mutex_);
  try {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
      fields_[index] = fields;
    } else {
      if (fields_.size() >= LiveRecord::kColdBit - 1) return LiveRecord::kNowhere;
      fields_.push_back(fields);
      index = static_cast<uint32_t>(fields_.size() - 1);
      try {
        // Reserved now, so that release, which must not fail, never has to grow it.
        free_.reserve(fields_.capacity());
      } catch (...) {
        fields_.pop_back();
        throw;
      }
    }
    return LiveRecord::kColdBit | index;
  } catch (...) {
    return LiveRecord::kNowhere;
  }
}

ColdFields ColdRecords::get(uint32_t where) const noexcept {
  std::lock_guard lock(mutex_);
  const uint32_t index = where & ~LiveRecord::kColdBit;
  return index < fields_.size() ? fields_[index] : ColdFields{};
}

void ColdRecords::release(uint32_t where) noexcept {
  std::lock_guard lock(mutex_);
  const uint32_t index = where & ~LiveRecord::kColdBit;
  if (index < fields_.size()) free_.push_back(index);  // never grows: reserved by put
}

size_t ColdRecords::memory_bytes() const {
  std::lock_guard lock(mutex_);
  return fields_.capacity() * sizeof(ColdFields) + free_.capacity() * sizeof(uint32_t);
}

}  // namespace leaseguard
