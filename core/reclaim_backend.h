// The one thing the core asks of the driver: give an allocation back.
//
// Contract, for whoever sits on the driver (interpose/ for the preload; the C++ API's bridge):
//   - release() frees `record` through the REAL driver (never a hook), with the free entry
//     point that matches the entry point that allocated it, in the same generation
//     (cuMemAlloc -> cuMemFree, cuMemAlloc_v2 -> cuMemFree_v2, host -> cuMemFreeHost,
//     stream-ordered -> cuMemFreeAsync then a synchronize, _ptsz with _ptsz; a VMM handle
//     -> cuMemRelease, a reserved range -> cuMemUnmap of what is mapped in it then
//     cuMemAddressFree, a pool -> cuMemPoolDestroy, an array -> its destroy, an IPC
//     mapping -> cuIpcCloseMemHandle, a registration -> cuMemHostUnregister, an external
//     object -> cuDestroyExternalMemory), with the
//     allocation's context current for the call and the caller's restored afterwards;
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
