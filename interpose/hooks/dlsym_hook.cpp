// The C half of leaseguard's dlsym: lookups on a specific handle.
//
// Why interpose dlsym rather than ship a libcuda.so.1 SONAME shim: a shim must forward the
// whole driver API (hundreds of functions, a new set each CUDA release) to the real driver
// and be first on the library path; interposing dlsym needs only the allocation family and
// leaves every other symbol untouched, so new driver functions pass through by construction.
// The cost is the caller-identity hazard, handled by the assembly trampoline.
//
// This path is kept trivial for every name but the hooked ones: the real lookup, then an
// exact-name check; no lock, no allocation, no dlopen, no logging.
#include <dlfcn.h>

#include "hook_table.h"
#include "preload_state.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

const void *object_base(const void *address) noexcept {
  Dl_info info;
  return dladdr(address, &info) != 0 ? info.dli_fbase : nullptr;
}

// A shim between leaseguard and the driver (HAMi-core's libvgpu.so, preloaded after
// leaseguard) is what the hook forwards to; when it looks the driver's function up on its
// own handle, it must get the driver's: a wrapper would send its forwarded call back into
// the hook, which forwards to the shim again, until the stack overflows. Its call was
// recorded already, in the hook that forwarded it. Anything else that looks a hooked name up
// (the runtime, a shim in front of leaseguard) gets the wrapper.
bool caller_is_forwarded_to(Api api, const void *caller) noexcept {
  void *forwarded_to = forwarded_function(api);
  if (forwarded_to == nullptr || caller == nullptr) return false;
  const void *base = object_base(forwarded_to);
  return base != nullptr && base == object_base(caller);
}

}  // namespace
}  // namespace leaseguard::interpose

extern "C" {

__attribute__((visibility("hidden"))) void *leaseguard_dlsym_on_handle(void *handle, const char *name,
                                                                       const void *caller) {
  using namespace leaseguard::interpose;
  void *result = real_dlsym()(handle, name);
  if (result == nullptr || g_pass_through) return result;
  const leaseguard::Api hook = find_hook(name);
  if (hook == leaseguard::Api::Unknown || is_wrapper(result)) return result;
  if (caller_is_forwarded_to(hook, caller)) return result;
  remember_real(hook, result);
  return wrapper_of(hook);
}

}  // extern "C"
