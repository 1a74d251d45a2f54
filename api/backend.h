// The device a GpuSession drives: the CUDA driver or the HIP runtime, loaded at run time
// (libcuda.so.1; libamdhip64.so.5, .so.6 or .so), so one build serves NVIDIA, AMD and the
// simulator. Calls go to the real functions (core().real_function), never to leaseguard's
// hooks: the session records its allocations itself, once.
//
// Every call makes `device` current for the calling thread (CUDA: its primary context,
// pushed and popped around the call; HIP: hipSetDevice) and returns the backend's status
// (0 is success). Backends are process-wide and never destroyed: handles may be dropped at
// exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "leaseguard/session.hpp"

namespace leaseguard::api {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual Backend kind() const noexcept = 0;
  virtual const std::string &name() const noexcept = 0;
  virtual int check_device(int device) noexcept = 0;
  virtual int alloc(int device, std::size_t bytes, std::uint64_t *out) noexcept = 0;
  virtual int free(int device, std::uint64_t pointer) noexcept = 0;
  virtual int write(int device, std::uint64_t to, const void *from, std::size_t bytes) noexcept = 0;
  virtual int read(int device, void *to, std::uint64_t from, std::size_t bytes) noexcept = 0;
  virtual int set(int device, std::uint64_t to, std::uint8_t value, std::size_t bytes) noexcept = 0;
  virtual int load_module(int device, const void *image, void **module) noexcept = 0;
  virtual int unload_module(int device, void *module) noexcept = 0;
  virtual int get_function(int device, void *module, const char *name, void **function) noexcept = 0;
  // Launches and waits for the kernel to complete. `extra` uses this backend's markers.
  virtual int launch(int device, void *function, Dim3 grid, Dim3 block, void **params, void **extra) noexcept = 0;
  virtual std::size_t max_parameter_bytes(int device) noexcept = 0;
  virtual std::string status_name(int status) noexcept = 0;
  // Statuses that mean the memory is gone with its context or the driver (a free that gets
  // one has nothing left to free).
  virtual bool means_gone(int status) const noexcept = 0;
  virtual std::uint16_t alloc_api() const noexcept = 0;       // leaseguard::Api of alloc()
  virtual std::uint16_t free_api() const noexcept = 0;        // leaseguard::Api of free()
  virtual std::uint64_t context_of(int device) noexcept = 0;  // what records carry as context
};

// The backend asked for (Auto: CUDA if it loads and has a device, else HIP), or null with
// `why` set.
DeviceBackend *open_backend(Backend wanted, std::string &why) noexcept;

// The loaded backend of a kind, or null (for reclaiming what the API allocated).
DeviceBackend *loaded_backend(Backend kind) noexcept;

}  // namespace leaseguard::api
