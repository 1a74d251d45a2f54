// Choosing the backend of a session (see backend.h).
#include "backend.h"

#include <atomic>

namespace leaseguard::api {

DeviceBackend *open_cuda_backend(std::string &why) noexcept;
DeviceBackend *open_hip_backend(std::string &why) noexcept;

namespace {
std::atomic<DeviceBackend *> g_cuda{nullptr};
std::atomic<DeviceBackend *> g_hip{nullptr};
}  // namespace

DeviceBackend *open_backend(Backend wanted, std::string &why) noexcept {
  std::string cuda_why, hip_why;
  if (wanted != Backend::Hip) {
    if (DeviceBackend *cuda = open_cuda_backend(cuda_why)) {
      g_cuda.store(cuda, std::memory_order_release);
      return cuda;
    }
    if (wanted == Backend::Cuda) {
      why = cuda_why;
      return nullptr;
    }
  }
  if (DeviceBackend *hip = open_hip_backend(hip_why)) {
    g_hip.store(hip, std::memory_order_release);
    return hip;
  }
  why = wanted == Backend::Hip ? hip_why : cuda_why + "; " + hip_why;
  return nullptr;
}

DeviceBackend *loaded_backend(Backend kind) noexcept {
  return (kind == Backend::Hip ? g_hip : g_cuda).load(std::memory_order_acquire);
}

}  // namespace leaseguard::api
