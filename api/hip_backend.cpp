// The HIP runtime behind a GpuSession (see backend.h).
#include <dlfcn.h>

#include "api_ids.h"
#include "backend.h"
#include "open_once.h"
#include "core_access.h"
#include "resource_rules.h"
#define LG_HIP_NO_PROTOTYPES 1
#include "lg_hip.h"

namespace leaseguard::api {
namespace {

// Device memory is allocated and freed with the table's entry points of this vendor.
constexpr Api kAlloc = kDeviceAlloc[static_cast<size_t>(Vendor::Hip)];
constexpr Api kFree = kDeviceFree[static_cast<size_t>(Vendor::Hip)];

class HipBackend final : public DeviceBackend {
 public:
  bool load(std::string &why) {
    for (const char *library : {"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"}) {
      runtime_ = dlopen(library, RTLD_NOW | RTLD_LOCAL);
      if (runtime_ != nullptr) break;
    }
    if (runtime_ == nullptr) {
      why = "libamdhip64.so (5, 6 or unversioned) does not load";
      return false;
    }
    bool complete = resolve(device_count_, "hipGetDeviceCount") && resolve(set_device_, "hipSetDevice") &&
                    resolve(get_device_, "hipGetDevice") && resolve(synchronize_, "hipDeviceSynchronize") &&
                    resolve(alloc_, api_name(kAlloc).data()) && resolve(free_, api_name(kFree).data()) &&
                    resolve(copy_, "hipMemcpy") && resolve(set_, "hipMemset") && resolve(load_, "hipModuleLoadData") &&
                    resolve(unload_, "hipModuleUnload") && resolve(function_, "hipModuleGetFunction") &&
                    resolve(launch_, "hipModuleLaunchKernel") && resolve(error_name_, "hipGetErrorName");
    if (!complete) {
      why = "libamdhip64 lacks a runtime function leaseguard needs";
      return false;
    }
    int count = 0;
    int status = device_count_(&count);
    if (status != hipSuccess || count == 0) {
      why = "the HIP runtime has no device (" + status_name(status) + ")";
      return false;
    }
    return true;
  }

  Backend kind() const noexcept override { return Backend::Hip; }
  const std::string &name() const noexcept override { return name_; }

  int check_device(int device) noexcept override {
    return on_device(device, [] { return hipSuccess; });
  }
  int alloc(int device, std::size_t bytes, std::uint64_t *out) noexcept override {
    return on_device(device, [&] {
      void *pointer = nullptr;
      hipError_t status = alloc_(&pointer, bytes);
      if (status == hipSuccess) *out = reinterpret_cast<std::uint64_t>(pointer);
      return status;
    });
  }
  int free(int device, std::uint64_t pointer) noexcept override {
    return on_device(device, [&] { return free_(reinterpret_cast<void *>(pointer)); });
  }
  int write(int device, std::uint64_t to, const void *from, std::size_t bytes) noexcept override {
    return on_device(device, [&] { return copy_(reinterpret_cast<void *>(to), from, bytes, hipMemcpyHostToDevice); });
  }
  int read(int device, void *to, std::uint64_t from, std::size_t bytes) noexcept override {
    return on_device(device, [&] { return copy_(to, reinterpret_cast<void *>(from), bytes, hipMemcpyDeviceToHost); });
  }
  int set(int device, std::uint64_t to, std::uint8_t value, std::size_t bytes) noexcept override {
    return on_device(device, [&] { return set_(reinterpret_cast<void *>(to), value, bytes); });
  }
  int load_module(int device, const void *image, void **module) noexcept override {
    return on_device(device, [&] { return load_(reinterpret_cast<hipModule_t *>(module), image); });
  }
  int unload_module(int device, void *module) noexcept override {
    return on_device(device, [&] { return unload_(static_cast<hipModule_t>(module)); });
  }
  int get_function(int device, void *module, const char *name, void **function) noexcept override {
    return on_device(device, [&] {
      return function_(reinterpret_cast<hipFunction_t *>(function), static_cast<hipModule_t>(module), name);
    });
  }
  int launch(int device, void *function, Dim3 grid, Dim3 block, void **params, void **extra) noexcept override {
    return on_device(device, [&] {
      hipError_t status = launch_(static_cast<hipFunction_t>(function), grid.x, grid.y, grid.z, block.x, block.y,
                                  block.z, 0, nullptr, params, extra);
      return status == hipSuccess ? synchronize_() : status;
    });
  }
  std::size_t max_parameter_bytes(int) noexcept override { return KernelArgs::kClassicLimit; }
  std::string status_name(int status) noexcept override {
    const char *text = error_name_ != nullptr ? error_name_(static_cast<hipError_t>(status)) : nullptr;
    return text != nullptr ? text : "HIP error " + std::to_string(status);
  }
  bool means_gone(int status) const noexcept override {
    return status == hipErrorDeinitialized || status == hipErrorContextIsDestroyed;
  }
  std::uint16_t alloc_api() const noexcept override { return static_cast<std::uint16_t>(kAlloc); }
  std::uint16_t free_api() const noexcept override { return static_cast<std::uint16_t>(kFree); }
  std::uint64_t context_of(int device) noexcept override { return hip_device_token(device); }

 private:
  template <typename Function>
  bool resolve(Function &function, const char *name) {
    function = reinterpret_cast<Function>(core().real_function(runtime_, name));
    return function != nullptr;
  }

  // The calling thread's device is the session's for the call, and the caller's afterwards.
  template <typename Call>
  int on_device(int device, Call call) noexcept {
    int previous = -1;
    if (get_device_(&previous) != hipSuccess) previous = -1;
    if (previous != device) {
      int status = set_device_(device);
      if (status != hipSuccess) return status;
    }
    int status = call();
    if (previous >= 0 && previous != device) set_device_(previous);
    return status;
  }

  std::string name_ = "hip";
  void *runtime_ = nullptr;
  lg_pfn_hipGetDeviceCount device_count_ = nullptr;
  lg_pfn_hipSetDevice set_device_ = nullptr;
  lg_pfn_hipGetDevice get_device_ = nullptr;
  lg_pfn_hipDeviceSynchronize synchronize_ = nullptr;
  lg_pfn_hipMalloc alloc_ = nullptr;
  lg_pfn_hipFree free_ = nullptr;
  lg_pfn_hipMemcpy copy_ = nullptr;
  lg_pfn_hipMemset set_ = nullptr;
  lg_pfn_hipModuleLoadData load_ = nullptr;
  lg_pfn_hipModuleUnload unload_ = nullptr;
  lg_pfn_hipModuleGetFunction function_ = nullptr;
  lg_pfn_hipModuleLaunchKernel launch_ = nullptr;
  lg_pfn_hipGetErrorName error_name_ = nullptr;
};

}  // namespace

DeviceBackend *open_hip_backend(std::string &why) noexcept { return open_once<HipBackend>(why); }

}  // namespace leaseguard::api
