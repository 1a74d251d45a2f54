// The one thing the core asks of the driver: give an allocation back.
//
// Contract, for whoever sits on the driver (interpose/ for the preload; the C++ API's bridge):
//   - release() frees `record` through the REAL driver (never a hook), with the entry point
//     the table names as its allocating entry point's release (core/base/entry_points.h: of the
//     same family, vendor and generation; stream-ordered memory freed on the default stream
//     of its generation and synchronized; a reserved range unmapped first), with the
//     allocation's context current for the call (HIP: its device) and the caller's restored
//     afterwards;
//   - it returns the driver's status (0 is success) and never throws;
//   - the core calls it with no core lock held, at most once per allocation, and only for an
//     allocation the program has not freed (the core has already taken the record out of
//     its table, so a racing free by the program is a late free, not a double free).
#pragma once

#include "handle_table.h"

namespace leaseguard {

class ReclaimBackend {
 public:
  virtual ~ReclaimBackend() = default;
  virtual int release(const HandleRecord &record) noexcept = 0;
};

}  // namespace leaseguard
