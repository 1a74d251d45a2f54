// The preload's side of the node lease authority (docs/lease-authority.md): a process started
// under `leaseguard lease start` (LEASEGUARD_AUTHORITY_LEASE is set) registers with the
// daemon once, at start, so that it stays a member of the lease wherever it is reparented.
// One message and its answer; no descriptor is kept, nothing is sent per allocation.
#pragma once

#include "options.h"

namespace leaseguard::interpose {

// Registers this process with the lease named by LEASEGUARD_AUTHORITY_LEASE at the socket
// LEASEGUARD_SOCKET names. A daemon that does not answer, or refuses, costs one warning;
// the program runs on as it would have.
void register_with_lease_authority(const Options &options) noexcept;

}  // namespace leaseguard::interpose
