// The preload's export of its core to the C++ API library (core/session/core_link.h): the API then
// records into this process's one core, and reaches the driver's own functions through the
// preload, which remembers them for its hooks.
#include <dlfcn.h>

#include "c_abi.h"
#include "core_link.h"
#include "hook_table.h"
#include "preload_state.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

void *real_function_of(void *driver_handle, const char *name) {
  if (driver_handle == nullptr || name == nullptr) return nullptr;
  // The C library's dlsym: leaseguard's own would hand back the hook for a hooked name.
  void *function = real_dlsym()(driver_handle, name);
  const Api hook = find_hook(name);
  if (function != nullptr && hook != Api::Unknown) remember_real(hook, function);
  return function;
}

}  // namespace
}  // namespace leaseguard::interpose

// The preload's C ABI (core/session/c_abi.cpp) records through the same link it exports.
const leaseguard_core_link &leaseguard::front_end_link() noexcept {
  static const leaseguard_core_link link = core_link(interpose::real_function_of);
  return link;
}

extern "C" __attribute__((visibility("default"))) const leaseguard_core_link *leaseguard_core_link_v1(void) {
  return leaseguard::interpose::recording_tracker() != nullptr ? &leaseguard::front_end_link() : nullptr;
}
