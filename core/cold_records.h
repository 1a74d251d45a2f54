// The side store for the fields the live table does not keep (handle_record.h), for the
// allocations whose journal record cannot hold them: the journal could not be opened, or it
// dropped the record. Rare by design, so simple: a vector of entries with a free list,
// under a mutex. Its memory follows the live set, not the allocations ever made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "handle_record.h"

namespace leaseguard {

class ColdRecords {
 public:
  // Keeps `fields`; returns where (a LiveRecord::where), or LiveRecord::kNowhere if out of
  // memory.
  uint32_t put(const ColdFields &fields) noexcept;
  // The fields kept at `where` (which put returned and release has not yet been given).
  ColdFields get(uint32_t where) const noexcept;
  void release(uint32_t where) noexcept;

  size_t memory_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::vector<ColdFields> fields_;
  std::vector<uint32_t> free_;
};

}  // namespace leaseguard
