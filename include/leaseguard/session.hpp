// leaseguard's C++ API: device memory that cannot leak by construction.
//
//   leaseguard::GpuSession session({.name = "job", .ttl = std::chrono::seconds(30)});
//   leaseguard::GpuMemHandle buffer = session.mem_alloc(1024);
//   session.mem_write(buffer, 0, std::as_bytes(std::span(input)));
//   ...                                   // a throw here frees `buffer` on the way out
//   session.mem_free(std::move(buffer));  // or let the last copy go out of scope
//
// A GpuSession is one lease: everything it allocates belongs to it, and when the lease ends
// (end(), the destructor, or its time-to-live) whatever is still allocated is reported as a
// leak and, with OnExpiry::Reclaim (the default), freed. It shares the process's one
// leaseguard core with the preload, so under `leaseguard run` nothing is recorded twice.
// The full contract of every type is in docs/api.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace leaseguard {

enum class Backend { Auto, Cuda, Hip };
enum class OnExpiry { Report, Reclaim, Abort };

struct SessionOptions {
  std::string name = "session";
  std::chrono::milliseconds ttl{0};        // 0: the lease never expires
  OnExpiry on_expiry = OnExpiry::Reclaim;  // what happens to leftovers when the lease ends
  int device = 0;
  Backend backend = Backend::Auto;  // Auto: CUDA if libcuda.so.1 loads, else HIP
};

// What went wrong. Driver errors carry the backend's status; the others are leaseguard's.
enum class ErrorKind {
  Driver,          // the driver or runtime refused: code() and name() say what it answered
  NoBackend,       // no usable libcuda.so.1 / libamdhip64.so (or not the one asked for)
  HandleFreed,     // the handle was freed (mem_free, or it is empty: default or moved-from)
  LeaseExpired,    // the session's lease has ended (end(), expiry); its memory is gone
  OutOfBounds,     // offset and length do not fit the allocation
  WrongSession,    // a handle used with another session than the one that allocated it
  ArgumentsTooBig  // kernel arguments over the target's parameter limit
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, int code, std::string name, const std::string &message)
      : std::runtime_error(message), kind_(kind), code_(code), name_(std::move(name)) {}
  ErrorKind kind() const noexcept { return kind_; }
  int code() const noexcept { return code_; }                 // backend status, 0 if none
  const std::string &name() const noexcept { return name_; }  // e.g. CUDA_ERROR_OUT_OF_MEMORY

 private:
  ErrorKind kind_;
  int code_;
  std::string name_;
};

namespace detail {
struct SessionState;
struct Allocation;
}  // namespace detail

// A device allocation made by a GpuSession. Copies share it (the count is atomic); the last
// copy to go frees it, once, also when copies are dropped on many threads at once. The
// destructor never throws: driver errors are logged at debug level and swallowed, a
// destroyed context or an unloading driver counts as freed, and when the lease already
// ended and leaseguard reclaimed the memory it does nothing at all. A handle may outlive its
// session and be dropped at process exit.
class GpuMemHandle {
 public:
  GpuMemHandle() noexcept = default;  // empty: freed() is true, raw() is 0
  GpuMemHandle(const GpuMemHandle &) noexcept = default;
  GpuMemHandle(GpuMemHandle &&) noexcept = default;
  GpuMemHandle &operator=(const GpuMemHandle &) noexcept = default;
  GpuMemHandle &operator=(GpuMemHandle &&) noexcept = default;
  ~GpuMemHandle() = default;  // the shared state frees the allocation with the last copy

  std::uint64_t raw() const noexcept;  // the device pointer (cuMemAlloc / hipMalloc), 0 if empty
  std::size_t size() const noexcept;   // bytes asked for
  bool freed() const noexcept;         // freed by mem_free, reclaimed, or empty

  friend bool operator==(const GpuMemHandle &a, const GpuMemHandle &b) noexcept { return a.state_ == b.state_; }
  friend std::ostream &operator<<(std::ostream &out, const GpuMemHandle &handle);

 private:
  friend class GpuSession;
  friend class KernelArgs;
  friend struct std::hash<GpuMemHandle>;
  explicit GpuMemHandle(std::shared_ptr<detail::Allocation> state) noexcept : state_(std::move(state)) {}
  std::shared_ptr<detail::Allocation> state_;
};

// Kernel arguments packed by the driver's rules: each at its natural alignment (a device
// pointer is 8 bytes), in push order. Usable as kernelParams (params()) or as the `extra`
// buffer (extra()). It holds a copy of every pushed handle, so the buffers stay allocated
// until the KernelArgs is gone (GpuSession::launch returns when the kernel has completed).
class KernelArgs {
 public:
  static constexpr std::size_t kClassicLimit = 4096;  // bytes of parameters, older targets
  static constexpr std::size_t kLargeLimit = 32764;   // CUDA 12.1+ drivers on Volta and later

  KernelArgs &push_buffer(const GpuMemHandle &handle);  // throws HandleFreed if it is freed
  // A value copied byte for byte (so trivially copyable); a host pointer is refused at
  // compile time: pass device memory with push_buffer(), or a raw() value.
  template <typename T>
  requires std::is_trivially_copyable_v<T> &&(!std::is_pointer_v<T>)KernelArgs &push(const T &value) {
    append(&value, sizeof(T), alignof(T));
    return *this;
  }

  std::size_t size() const noexcept { return buffer_.size(); }  // packed bytes
  std::size_t count() const noexcept { return offsets_.size(); }
  std::size_t offset(std::size_t index) const { return offsets_.at(index); }
  std::span<const std::byte> buffer() const noexcept { return buffer_; }
  void **params();  // one pointer per argument, into buffer(); valid until the next push
  // {BUFFER_POINTER, data, BUFFER_SIZE, &size, END} with CUDA's markers (extra()) or the
  // given backend's (HIP numbers END differently); valid until the next push.
  void **extra();
  void **extra_for(Backend backend);

 private:
  friend class GpuSession;
  void append(const void *value, std::size_t bytes, std::size_t alignment);
  std::vector<std::byte> buffer_;
  std::vector<std::size_t> offsets_;
  std::vector<void *> params_;
  std::vector<void *> extra_;
  std::size_t extra_size_ = 0;
  std::vector<GpuMemHandle> keep_alive_;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A kernel of a module the session loaded.
class GpuFunction {
 public:
  const std::string &name() const noexcept { return name_; }

 private:
  friend class GpuSession;
  GpuFunction(std::shared_ptr<detail::SessionState> session, void *function, std::shared_ptr<void> module,
              std::string name)
      : session_(std::move(session)), function_(function), module_(std::move(module)), name_(std::move(name)) {}
  std::shared_ptr<detail::SessionState> session_;
  void *function_ = nullptr;
  std::shared_ptr<void> module_;  // unloaded with its last function
  std::string name_;
};

class GpuSession {
 public:
  explicit GpuSession(SessionOptions options = {});
  GpuSession(const GpuSession &) = delete;
  GpuSession &operator=(const GpuSession &) = delete;
  GpuSession(GpuSession &&) noexcept = default;
  GpuSession &operator=(GpuSession &&) noexcept;
  ~GpuSession();  // ends the lease (as end()), never throws

  GpuMemHandle mem_alloc(std::size_t bytes);
  void mem_write(const GpuMemHandle &handle, std::size_t offset, std::span<const std::byte> data);
  void mem_read(const GpuMemHandle &handle, std::size_t offset, std::span<std::byte> out);
  void mem_set(const GpuMemHandle &handle, std::size_t offset, std::uint8_t value, std::size_t bytes);
  void mem_free(GpuMemHandle handle);  // frees now; every copy becomes freed and drops do nothing

  GpuFunction load_function(std::span<const std::byte> module_image, std::string_view name);
  // Launches and waits for completion. With `as_extra` the arguments go as the packed
  // `extra` buffer instead of kernelParams.
  void launch(const GpuFunction &function, Dim3 grid, Dim3 block, KernelArgs &args, bool as_extra = false);

  bool expired() const noexcept;  // the lease ended (end(), or its TTL)
  std::size_t end();              // ends the lease now; returns the lost allocations it held
  Backend backend() const noexcept;
  const std::string &backend_name() const noexcept;  // "cuda", "hip"
  int device() const noexcept;
  std::uint64_t lease_id() const noexcept;

 private:
  std::shared_ptr<detail::SessionState> state_;
};

std::ostream &operator<<(std::ostream &out, Backend backend);

// A live check now (leaseguard_check in <leaseguard/leaseguard.h>): every live allocation of
// the process classified while it runs, what is lost and what still reachable recorded in the
// journal; nothing ends. False where no check could be made (leaseguard not recording,
// --reachability=off, the process exiting).
bool check_now();

}  // namespace leaseguard

template <>
struct std::hash<leaseguard::GpuMemHandle> {
  std::size_t operator()(const leaseguard::GpuMemHandle &handle) const noexcept {
    return std::hash<const void *>()(handle.state_.get());
  }
};
