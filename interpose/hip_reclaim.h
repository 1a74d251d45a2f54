// Reclaiming HIP allocations (called by DriverReclaimBackend for records of HIP entry points).
#pragma once

#include "handle_table.h"

namespace leaseguard::interpose {

// Frees `record` through the HIP runtime that holds `anchor` (a real HIP function); returns
// the runtime's status.
int release_hip(void *anchor, const HandleRecord &record) noexcept;

}  // namespace leaseguard::interpose
