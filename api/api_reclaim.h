// Reclaiming for the API library's own core (no preload in the process): what the API
// allocated is freed through the backend that allocated it.
#pragma once

#include "reclaim_backend.h"

namespace leaseguard::api {

class ApiReclaimBackend final : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override;
};

}  // namespace leaseguard::api
