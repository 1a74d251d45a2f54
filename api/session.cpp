// GpuSession and GpuMemHandle (include/leaseguard/session.hpp; contracts in docs/api.md).
#include <ostream>

#include "api_ids.h"
#include "core_access.h"
#include "log.h"
#include "session_state.h"
#include "tracker.h"

namespace leaseguard {
namespace detail {

void fail(ErrorKind kind, const std::string &message) { throw Error(kind, 0, "", message); }

void SessionState::fail_driver(int status, const char *what) const {
  std::string status_name = backend->status_name(status);
  throw Error(ErrorKind::Driver, status, status_name,
              std::string(what) + " failed on " + backend->name() + " device " + std::to_string(device) + ": " +
                  status_name + " (" + std::to_string(status) + ")");
}

bool SessionState::lease_over() const noexcept {
  if (ended.load(std::memory_order_acquire)) return true;
  if (lease == 0) return false;
  auto state = static_cast<LeaseState>(api::core().lease_state(lease));
  return state == LeaseState::Ended || state == LeaseState::Expired;
}

std::size_t SessionState::end() noexcept {
  if (ended.exchange(true, std::memory_order_acq_rel) || lease == 0) return 0;
  int leaked = api::core().lease_end(lease);  // -1: it had expired already
  return leaked > 0 ? static_cast<std::size_t>(leaked) : 0;
}

void SessionState::release(std::uint64_t pointer) noexcept {
  // Reclaimed when the lease ended: the memory is gone already, and the address may even
  // belong to someone else by now.
  if (api::core().on_owner_drop(backend->free_api(), pointer) == static_cast<int>(FreeOutcome::Reclaimed)) return;
  int status = backend->free(device, pointer);
  if (status != 0 && !backend->means_gone(status))
    log_debug("freeing %#llx on %s device %d failed with status %d; ignored", static_cast<unsigned long long>(pointer),
              backend->name().c_str(), device, status);
}

}  // namespace detail

// --- GpuMemHandle --------------------------------------------------------------------------------

std::uint64_t GpuMemHandle::raw() const noexcept { return state_ ? state_->pointer : 0; }
std::size_t GpuMemHandle::size() const noexcept { return state_ ? state_->bytes : 0; }
bool GpuMemHandle::freed() const noexcept {
  if (!state_ || state_->freed.load(std::memory_order_acquire)) return true;
  // Reclaimed with the lease (the handle itself is not told).
  const detail::SessionState &session = *state_->session;
  return session.lease != 0 && session.on_expiry == OnExpiry::Reclaim && session.lease_over();
}

std::ostream &operator<<(std::ostream &out, const GpuMemHandle &handle) {
  if (!handle.state_) return out << "GpuMemHandle(empty)";
  std::ios_base::fmtflags flags = out.flags();
  out << "GpuMemHandle(0x" << std::hex << handle.raw();
  out.flags(flags);
  out << ", " << handle.size() << " bytes, " << handle.state_->session->backend->name() << " device "
      << handle.state_->session->device << (handle.freed() ? ", freed)" : ")");
  return out;
}

std::ostream &operator<<(std::ostream &out, Backend backend) {
  switch (backend) {
    case Backend::Auto: return out << "auto";
    case Backend::Cuda: return out << "cuda";
    case Backend::Hip: return out << "hip";
  }
  return out << "unknown";
}

// --- GpuSession ----------------------------------------------------------------------------------

namespace {

Policy policy_of(OnExpiry on_expiry) {
  switch (on_expiry) {
    case OnExpiry::Report: return Policy::Report;
    case OnExpiry::Abort: return Policy::Abort;
    default: return Policy::Reclaim;
  }
}

}  // namespace

// NOLINTNEXTLINE(performance-unnecessary-value-param): the contract's signature
GpuSession::GpuSession(SessionOptions options) : state_(std::make_shared<detail::SessionState>()) {
  std::string why;
  state_->backend = api::open_backend(options.backend, why);
  if (state_->backend == nullptr)
    detail::fail(ErrorKind::NoBackend, "no GPU backend for session \"" + options.name + "\": " + why);
  state_->device = options.device;
  state_->name = options.name;
  state_->on_expiry = options.on_expiry;
  if (int status = state_->backend->check_device(options.device); status != 0)
    state_->fail_driver(status, "opening the device");
  auto ttl = options.ttl.count() > 0 ? static_cast<std::uint64_t>(options.ttl.count()) : 0;
  state_->lease = api::core().lease_begin(options.name.c_str(), ttl, static_cast<int>(policy_of(options.on_expiry)));
  log_debug("session \"%s\": %s device %d, lease %llu", options.name.c_str(), state_->backend->name().c_str(),
            options.device, static_cast<unsigned long long>(state_->lease));
}

GpuSession &GpuSession::operator=(GpuSession &&other) noexcept {
  if (this != &other) {
    if (state_) state_->end();
    state_ = std::move(other.state_);
  }
  return *this;
}

GpuSession::~GpuSession() {
  if (state_) state_->end();
}

namespace {

const detail::SessionState &usable(const std::shared_ptr<detail::SessionState> &state) {
  if (!state) detail::fail(ErrorKind::LeaseExpired, "the session was moved from");
  if (state->lease_over())
    detail::fail(ErrorKind::LeaseExpired, "session \"" + state->name + "\": its lease has ended");
  return *state;
}

const detail::Allocation &allocation_of(const std::shared_ptr<detail::SessionState> &session,
                                        const std::shared_ptr<detail::Allocation> &state) {
  if (!state || state->freed.load(std::memory_order_acquire))
    detail::fail(ErrorKind::HandleFreed, "the handle was freed (or is empty)");
  if (state->session != session)
    detail::fail(ErrorKind::WrongSession, "the handle belongs to another session (\"" + state->session->name + "\")");
  return *state;
}

void check_range(const detail::Allocation &allocation, std::size_t offset, std::size_t length) {
  if (offset > allocation.bytes || length > allocation.bytes - offset)
    detail::fail(ErrorKind::OutOfBounds, "offset " + std::to_string(offset) + " + " + std::to_string(length) +
                                             " bytes is past the end of a " + std::to_string(allocation.bytes) +
                                             "-byte allocation");
}

}  // namespace

GpuMemHandle GpuSession::mem_alloc(std::size_t bytes) {
  // Where the program's stack begins: the recorded stack starts at the program's call.
  const WalkStart caller = walk_start_above(__builtin_frame_address(0));
  const detail::SessionState &session = usable(state_);
  // Drivers disagree on 0 bytes (CUDA refuses, HIP returns NULL); a handle is never empty.
  if (bytes == 0) detail::fail(ErrorKind::OutOfBounds, "mem_alloc of 0 bytes");
  std::uint64_t pointer = 0;
  if (int status = session.backend->alloc(session.device, bytes, &pointer); status != 0)
    session.fail_driver(status, "mem_alloc");
  std::shared_ptr<detail::Allocation> allocation;
  try {
    allocation = std::make_shared<detail::Allocation>(state_, pointer, bytes);
  } catch (...) {
    session.backend->free(session.device, pointer);
    throw;
  }
  leaseguard_alloc_event event{};
  event.api = session.backend->alloc_api();
  event.kind = static_cast<std::uint8_t>(Kind::Device);
  event.device = session.device;
  event.value = pointer;
  event.bytes = bytes;
  event.context = session.backend->context_of(session.device);
  event.lease = session.lease;
  api::record_alloc(event, caller);
  // The lease may have ended while the driver allocated (its TTL, on another thread). Then
  // the allocation was either reclaimed with it or, recorded after its end, left to the
  // process: neither is the session's to hand out. It goes back (`allocation`'s release
  // frees it unless it was reclaimed), and the caller is told as for any allocation in an
  // ended lease; a handle whose freed() said true while its memory was live never escapes.
  if (session.lease_over())
    detail::fail(ErrorKind::LeaseExpired, "session \"" + session.name + "\": its lease ended while allocating");
  return GpuMemHandle(std::move(allocation));
}

void GpuSession::mem_write(const GpuMemHandle &handle, std::size_t offset, std::span<const std::byte> data) {
  const detail::SessionState &session = usable(state_);
  const detail::Allocation &allocation = allocation_of(state_, handle.state_);
  check_range(allocation, offset, data.size());
  if (data.empty()) return;
  if (int status = session.backend->write(session.device, allocation.pointer + offset, data.data(), data.size());
      status != 0)
    session.fail_driver(status, "mem_write");
}

void GpuSession::mem_read(const GpuMemHandle &handle, std::size_t offset, std::span<std::byte> out) {
  const detail::SessionState &session = usable(state_);
  const detail::Allocation &allocation = allocation_of(state_, handle.state_);
  check_range(allocation, offset, out.size());
  if (out.empty()) return;
  if (int status = session.backend->read(session.device, out.data(), allocation.pointer + offset, out.size());
      status != 0)
    session.fail_driver(status, "mem_read");
}

void GpuSession::mem_set(const GpuMemHandle &handle, std::size_t offset, std::uint8_t value, std::size_t bytes) {
  const detail::SessionState &session = usable(state_);
  const detail::Allocation &allocation = allocation_of(state_, handle.state_);
  check_range(allocation, offset, bytes);
  if (bytes == 0) return;
  if (int status = session.backend->set(session.device, allocation.pointer + offset, value, bytes); status != 0)
    session.fail_driver(status, "mem_set");
}

// By value, as the contract declares it: the caller gives its handle up.
void GpuSession::mem_free(GpuMemHandle handle) {  // NOLINT(performance-unnecessary-value-param)
  if (!handle.state_ || handle.state_->freed.load(std::memory_order_acquire))
    detail::fail(ErrorKind::HandleFreed, "mem_free of a handle that was freed (or is empty)");
  if (state_ && handle.state_->session != state_)
    detail::fail(ErrorKind::WrongSession,
                 "mem_free of a handle that belongs to another session (\"" + handle.state_->session->name + "\")");
  detail::SessionState &session = *handle.state_->session;
  // Every copy is freed from now on, whatever follows: their drops do nothing.
  if (handle.state_->freed.exchange(true, std::memory_order_acq_rel))
    detail::fail(ErrorKind::HandleFreed, "mem_free of a handle that another thread freed");
  if (session.lease_over()) {
    // The lease is over: leaseguard reclaimed or reported its memory. A late free of
    // reported (not reclaimed) memory still reaches the driver; either way the session says
    // the lease has ended.
    session.release(handle.state_->pointer);
    detail::fail(ErrorKind::LeaseExpired, "mem_free after session \"" + session.name + "\" ended");
  }
  if (api::core().on_free(session.backend->free_api(), handle.state_->pointer) ==
      static_cast<int>(FreeOutcome::Reclaimed))
    return;
  if (int status = session.backend->free(session.device, handle.state_->pointer);
      status != 0 && !session.backend->means_gone(status))
    session.fail_driver(status, "mem_free");
}

bool check_now() {
  const leaseguard_core_link &link = api::core();
  return leaseguard_core_link_has(link, check) && link.check() == 0;
}

bool GpuSession::expired() const noexcept { return !state_ || state_->lease_over(); }
std::size_t GpuSession::end() { return state_ ? state_->end() : 0; }
Backend GpuSession::backend() const noexcept { return state_ ? state_->backend->kind() : Backend::Auto; }
const std::string &GpuSession::backend_name() const noexcept {
  static const std::string none = "none";
  return state_ ? state_->backend->name() : none;
}
int GpuSession::device() const noexcept { return state_ ? state_->device : -1; }
std::uint64_t GpuSession::lease_id() const noexcept { return state_ ? state_->lease : 0; }

}  // namespace leaseguard
