// The shared state behind GpuSession, GpuMemHandle and GpuFunction (include/leaseguard/
// session.hpp). A session's state lives as long as anything made from it, so a handle may
// be dropped after its GpuSession is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "backend.h"
#include "leaseguard/session.hpp"

namespace leaseguard::detail {

struct SessionState {
  api::DeviceBackend *backend = nullptr;
  int device = 0;
  std::uint64_t lease = 0;  // 0: leaseguard records nothing in this process
  OnExpiry on_expiry = OnExpiry::Reclaim;
  std::string name;
  std::atomic<bool> ended{false};

  bool lease_over() const noexcept;
  std::size_t end() noexcept;
  // Gives an allocation back when its last handle goes; never throws.
  void release(std::uint64_t pointer) noexcept;
  [[noreturn]] void fail_driver(int status, const char *what) const;
};

struct Allocation {
  std::shared_ptr<SessionState> session;
  std::uint64_t pointer = 0;
  std::size_t bytes = 0;
  std::atomic<bool> freed{false};

  Allocation(std::shared_ptr<SessionState> owner, std::uint64_t raw, std::size_t size)
      : session(std::move(owner)), pointer(raw), bytes(size) {}
  ~Allocation() {
    if (!freed.exchange(true, std::memory_order_acq_rel)) session->release(pointer);
  }
};

[[noreturn]] void fail(ErrorKind kind, const std::string &message);

}  // namespace leaseguard::detail
