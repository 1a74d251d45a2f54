// KernelArgs, module loading and launches (include/leaseguard/session.hpp).
#include <cstring>

#include "lg_cuda.h"
#include "session_state.h"
#define LG_HIP_NO_PROTOTYPES 1
#include "lg_hip.h"

namespace leaseguard {

void KernelArgs::append(const void *value, std::size_t bytes, std::size_t alignment) {
  std::size_t offset = (buffer_.size() + alignment - 1) / alignment * alignment;
  if (offset + bytes > kLargeLimit)
    detail::fail(ErrorKind::ArgumentsTooBig, "kernel arguments would take " + std::to_string(offset + bytes) +
                                                 " bytes; no target accepts more than " + std::to_string(kLargeLimit));
  buffer_.resize(offset + bytes);
  std::memcpy(buffer_.data() + offset, value, bytes);
  offsets_.push_back(offset);
}

KernelArgs &KernelArgs::push_buffer(const GpuMemHandle &handle) {
  if (handle.freed()) detail::fail(ErrorKind::HandleFreed, "push_buffer of a handle that was freed (or is empty)");
  std::uint64_t pointer = handle.raw();  // a device pointer is 8 bytes on every target
  append(&pointer, sizeof pointer, alignof(std::uint64_t));
  keep_alive_.push_back(handle);
  return *this;
}

void **KernelArgs::params() {
  params_.clear();
  for (std::size_t offset : offsets_) params_.push_back(buffer_.data() + offset);
  params_.push_back(nullptr);
  return params_.data();
}

void **KernelArgs::extra() { return extra_for(Backend::Cuda); }

void **KernelArgs::extra_for(Backend backend) {
  extra_size_ = buffer_.size();
  const bool hip = backend == Backend::Hip;
  extra_ = {hip ? LG_HIP_LAUNCH_PARAM_BUFFER_POINTER : CU_LAUNCH_PARAM_BUFFER_POINTER, buffer_.data(),
            hip ? LG_HIP_LAUNCH_PARAM_BUFFER_SIZE : CU_LAUNCH_PARAM_BUFFER_SIZE, &extra_size_,
            hip ? LG_HIP_LAUNCH_PARAM_END : CU_LAUNCH_PARAM_END};
  return extra_.data();
}

namespace {

const detail::SessionState &open_session(const std::shared_ptr<detail::SessionState> &state) {
  if (!state) detail::fail(ErrorKind::LeaseExpired, "the session was moved from");
  if (state->lease_over())
    detail::fail(ErrorKind::LeaseExpired, "session \"" + state->name + "\": its lease has ended");
  return *state;
}

}  // namespace

GpuFunction GpuSession::load_function(std::span<const std::byte> module_image, std::string_view name) {
  const detail::SessionState &session = open_session(state_);
  void *module = nullptr;
  if (int status = session.backend->load_module(session.device, module_image.data(), &module); status != 0)
    session.fail_driver(status, "loading a module");
  // The module is unloaded when its last function goes (never throwing, like a handle).
  auto owner = state_;
  std::shared_ptr<void> loaded(module,
                               [owner](void *unloading) { owner->backend->unload_module(owner->device, unloading); });
  void *function = nullptr;
  std::string kernel(name);
  if (int status = session.backend->get_function(session.device, module, kernel.c_str(), &function); status != 0)
    session.fail_driver(status, ("finding kernel " + kernel).c_str());
  return GpuFunction(state_, function, std::move(loaded), std::move(kernel));
}

void GpuSession::launch(const GpuFunction &function, Dim3 grid, Dim3 block, KernelArgs &args, bool as_extra) {
  const detail::SessionState &session = open_session(state_);
  if (function.session_ != state_)
    detail::fail(ErrorKind::WrongSession, "kernel " + function.name() + " was loaded by another session");
  for (const GpuMemHandle &handle : args.keep_alive_)
    if (handle.freed())
      detail::fail(ErrorKind::HandleFreed, "a buffer pushed for kernel " + function.name() + " was freed since");
  std::size_t limit = session.backend->max_parameter_bytes(session.device);
  if (args.size() > limit)
    detail::fail(ErrorKind::ArgumentsTooBig, "kernel " + function.name() + " gets " + std::to_string(args.size()) +
                                                 " bytes of arguments; this target takes at most " +
                                                 std::to_string(limit));
  void **params = as_extra ? nullptr : args.params();
  void **extra = as_extra ? args.extra_for(session.backend->kind()) : nullptr;
  if (int status = session.backend->launch(session.device, function.function_, grid, block, params, extra); status != 0)
    session.fail_driver(status, ("launching kernel " + function.name()).c_str());
}

}  // namespace leaseguard
