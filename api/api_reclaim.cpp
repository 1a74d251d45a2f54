// Implementation of ApiReclaimBackend (see api_reclaim.h and core/session/reclaim_backend.h).
#include "api_reclaim.h"

#include "backend.h"
#include "resource_rules.h"

namespace leaseguard::api {

int ApiReclaimBackend::release(const HandleRecord &record) noexcept {
  DeviceBackend *backend = loaded_backend(vendor_of(record.api) == Vendor::Hip ? Backend::Hip : Backend::Cuda);
  if (backend == nullptr) return -1;
  return backend->free(record.device, record.address);
}

}  // namespace leaseguard::api
