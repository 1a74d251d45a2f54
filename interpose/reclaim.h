// The preload's ReclaimBackend: frees through the real driver functions.
#pragma once

#include "reclaim_backend.h"

namespace leaseguard::interpose {

class DriverReclaimBackend final : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override;
};

}  // namespace leaseguard::interpose
