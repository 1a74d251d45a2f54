// The daemon's side of the control page (tools/authority/protocol/authority_protocol.h): asking one process of an
// ending lease to give back what its leases own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace leaseguard::authority {

// Writes `request` (kControlReclaim | reason) into the control page at `control_path` and
// wakes the process's control thread. The page must be a regular file that `owner` owns (no
// link followed, no FIFO waited on: a process of the lease cannot have the daemon write
// another user's file or block), of the page's size, with the page's magic. The daemon never
// reads or writes through its mapping (the process may truncate the file under it): pread,
// pwrite, and the mapping only to name the futex. False with `error` if the process could not
// be asked; the teardown's later stages still end it.
bool ask_to_reclaim(const std::string &control_path, uid_t owner, uint32_t request, std::string &error);

}  // namespace leaseguard::authority
