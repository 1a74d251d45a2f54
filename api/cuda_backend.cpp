// The CUDA driver behind a GpuSession (see backend.h).
#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "api_ids.h"
#include "backend.h"
#include "open_once.h"
#include "core_access.h"
#define LG_CUDA_NO_PROTOTYPES 1
#include "lg_cuda.h"

namespace leaseguard::api {
namespace {

// Device memory is allocated and freed with the table's entry points of this vendor.
constexpr Api kAlloc = kDeviceAlloc[static_cast<size_t>(Vendor::Cuda)];
constexpr Api kFree = kDeviceFree[static_cast<size_t>(Vendor::Cuda)];

class CudaBackend final : public DeviceBackend {
 public:
  bool load(std::string &why) {
    driver_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver_ == nullptr) {
      why = "libcuda.so.1 does not load";
      return false;
    }
    bool complete = resolve(init_, "cuInit") && resolve(device_get_, "cuDeviceGet") &&
                    resolve(device_count_, "cuDeviceGetCount") && resolve(attribute_, "cuDeviceGetAttribute") &&
                    resolve(retain_, "cuDevicePrimaryCtxRetain") && resolve(push_, api_name(kPushContext).data()) &&
                    resolve(pop_, api_name(kPopContext).data()) && resolve(synchronize_, "cuCtxSynchronize") &&
                    resolve(alloc_, api_name(kAlloc).data()) && resolve(free_, api_name(kFree).data()) &&
                    resolve(write_, "cuMemcpyHtoD_v2") && resolve(read_, "cuMemcpyDtoH_v2") &&
                    resolve(set_, "cuMemsetD8_v2") && resolve(load_, "cuModuleLoadData") &&
                    resolve(unload_, api_name(kUnloadModule).data()) && resolve(function_, "cuModuleGetFunction") &&
                    resolve(launch_, "cuLaunchKernel") && resolve(error_name_, "cuGetErrorName") &&
                    resolve(driver_version_, "cuDriverGetVersion");
    if (!complete) {
      why = "libcuda.so.1 lacks a driver function leaseguard needs";
      return false;
    }
    int count = 0;
    int status = init_(0);
    if (status == CUDA_SUCCESS) status = device_count_(&count);
    if (status != CUDA_SUCCESS || count == 0) {
      why = "the CUDA driver has no device (" + status_name(status) + ")";
      return false;
    }
    return true;
  }

  Backend kind() const noexcept override { return Backend::Cuda; }
  const std::string &name() const noexcept override { return name_; }

  int check_device(int device) noexcept override {
    CUcontext context = nullptr;
    return primary(device, &context);
  }
  int alloc(int device, std::size_t bytes, std::uint64_t *out) noexcept override {
    return in_context(device, [&] {
      CUdeviceptr pointer = 0;
      CUresult status = alloc_(&pointer, bytes);
      if (status == CUDA_SUCCESS) *out = pointer;
      return status;
    });
  }
  int free(int device, std::uint64_t pointer) noexcept override {
    return in_context(device, [&] { return free_(pointer); });
  }
  int write(int device, std::uint64_t to, const void *from, std::size_t bytes) noexcept override {
    return in_context(device, [&] { return write_(to, from, bytes); });
  }
  int read(int device, void *to, std::uint64_t from, std::size_t bytes) noexcept override {
    return in_context(device, [&] { return read_(to, from, bytes); });
  }
  int set(int device, std::uint64_t to, std::uint8_t value, std::size_t bytes) noexcept override {
    return in_context(device, [&] { return set_(to, value, bytes); });
  }
  int load_module(int device, const void *image, void **module) noexcept override {
    return in_context(device, [&] { return load_(reinterpret_cast<CUmodule *>(module), image); });
  }
  int unload_module(int device, void *module) noexcept override {
    return in_context(device, [&] { return unload_(static_cast<CUmodule>(module)); });
  }
  int get_function(int device, void *module, const char *name, void **function) noexcept override {
    return in_context(device, [&] {
      return function_(reinterpret_cast<CUfunction *>(function), static_cast<CUmodule>(module), name);
    });
  }
  int launch(int device, void *function, Dim3 grid, Dim3 block, void **params, void **extra) noexcept override {
    return in_context(device, [&] {
      CUresult status = launch_(static_cast<CUfunction>(function), grid.x, grid.y, grid.z, block.x, block.y, block.z, 0,
                                nullptr, params, extra);
      return status == CUDA_SUCCESS ? synchronize_() : status;
    });
  }
  std::size_t max_parameter_bytes(int device) noexcept override {
    // 32764 bytes from CUDA 12.1 on Volta (compute capability 7.0) and later; else 4 KiB.
    int version = 0, major = 0;
    CUdevice handle = 0;
    if (driver_version_(&version) != CUDA_SUCCESS || device_get_(&handle, device) != CUDA_SUCCESS ||
        attribute_(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle) != CUDA_SUCCESS)
      return KernelArgs::kClassicLimit;
    return version >= 12010 && major >= 7 ? KernelArgs::kLargeLimit : KernelArgs::kClassicLimit;
  }
  std::string status_name(int status) noexcept override {
    const char *text = nullptr;
    if (error_name_ != nullptr && error_name_(static_cast<CUresult>(status), &text) == CUDA_SUCCESS && text != nullptr)
      return text;
    return "CUDA error " + std::to_string(status);
  }
  bool means_gone(int status) const noexcept override {
    return status == CUDA_ERROR_DEINITIALIZED || status == CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }
  std::uint16_t alloc_api() const noexcept override { return static_cast<std::uint16_t>(kAlloc); }
  std::uint16_t free_api() const noexcept override { return static_cast<std::uint16_t>(kFree); }
  std::uint64_t context_of(int device) noexcept override {
    CUcontext context = nullptr;
    return primary(device, &context) == CUDA_SUCCESS ? reinterpret_cast<std::uint64_t>(context) : 0;
  }

 private:
  template <typename Function>
  bool resolve(Function &function, const char *name) {
    function = reinterpret_cast<Function>(core().real_function(driver_, name));
    return function != nullptr;
  }

  // The device's primary context, retained once for the process.
  int primary(int device, CUcontext *out) noexcept {
    if (device < 0 || device >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
    CUcontext known = primaries_[device].load(std::memory_order_acquire);
    if (known != nullptr) {
      *out = known;
      return CUDA_SUCCESS;
    }
    std::lock_guard lock(mutex_);
    known = primaries_[device].load(std::memory_order_relaxed);
    if (known == nullptr) {
      CUdevice handle = 0;
      CUresult status = device_get_(&handle, device);
      if (status == CUDA_SUCCESS) status = retain_(&known, handle);
      if (status != CUDA_SUCCESS) return status;
      primaries_[device].store(known, std::memory_order_release);
    }
    *out = known;
    return CUDA_SUCCESS;
  }

  template <typename Call>
  int in_context(int device, Call call) noexcept {
    CUcontext context = nullptr;
    int status = primary(device, &context);
    if (status != CUDA_SUCCESS) return status;
    status = push_(context);
    if (status != CUDA_SUCCESS) return status;
    status = call();
    CUcontext popped = nullptr;
    pop_(&popped);
    return status;
  }

  static constexpr int kMaxDevices = 64;
  std::string name_ = "cuda";
  void *driver_ = nullptr;
  std::mutex mutex_;
  std::atomic<CUcontext> primaries_[kMaxDevices] = {};
  lg_pfn_cuInit init_ = nullptr;
  lg_pfn_cuDeviceGet device_get_ = nullptr;
  lg_pfn_cuDeviceGetCount device_count_ = nullptr;
  lg_pfn_cuDeviceGetAttribute attribute_ = nullptr;
  lg_pfn_cuDevicePrimaryCtxRetain retain_ = nullptr;
  lg_pfn_cuCtxPushCurrent_v2 push_ = nullptr;
  lg_pfn_cuCtxPopCurrent_v2 pop_ = nullptr;
  lg_pfn_cuCtxSynchronize synchronize_ = nullptr;
  lg_pfn_cuMemAlloc_v2 alloc_ = nullptr;
  lg_pfn_cuMemFree_v2 free_ = nullptr;
  lg_pfn_cuMemcpyHtoD_v2 write_ = nullptr;
  lg_pfn_cuMemcpyDtoH_v2 read_ = nullptr;
  lg_pfn_cuMemsetD8_v2 set_ = nullptr;
  lg_pfn_cuModuleLoadData load_ = nullptr;
  lg_pfn_cuModuleUnload unload_ = nullptr;
  lg_pfn_cuModuleGetFunction function_ = nullptr;
  lg_pfn_cuLaunchKernel launch_ = nullptr;
  lg_pfn_cuGetErrorName error_name_ = nullptr;
  lg_pfn_cuDriverGetVersion driver_version_ = nullptr;
};

}  // namespace

DeviceBackend *open_cuda_backend(std::string &why) noexcept { return open_once<CudaBackend>(why); }

}  // namespace leaseguard::api
