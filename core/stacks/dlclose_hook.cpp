// The front ends' dlclose (compiled into the preload and into the C++ API library, not into
// the core library, whose users need not export one): the loader's own, then the core's
// address-keyed caches are told that code went away (code_generation.h), so a library later
// loaded at the same addresses is walked with its own frame rules and reported under its
// own name.
//
// In a process with both, the first loaded comes first in the lookup order and calls the
// other as the next; each notes the unload in its own core, which costs the unused one a
// cleared cache.
#include <dlfcn.h>

#include "code_generation.h"

namespace {

using Dlclose = int (*)(void *);

// The C library's dlclose, or another interposer's after this one; nullptr if there is none.
Dlclose next_dlclose() noexcept {
  static Dlclose real_dlclose = nullptr;
  Dlclose function = __atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE);
  if (function == nullptr) {
    function = reinterpret_cast<Dlclose>(dlsym(RTLD_NEXT, "dlclose"));
    if (function != nullptr) __atomic_store_n(&real_dlclose, function, __ATOMIC_RELEASE);
  }
  return function;
}

}  // namespace

int leaseguard::drop_noload_reference(void *handle) noexcept {
  const Dlclose function = next_dlclose();
  return function != nullptr ? function(handle) : -1;
}

extern "C" __attribute__((visibility("default"))) int dlclose(void *handle) {
  const Dlclose function = next_dlclose();
  if (function == nullptr) return -1;  // no dlclose in the process: nothing was loaded by dlopen
  const int status = function(handle);
  // Only a successful call can have unmapped anything; one that dropped a reference without
  // unloading costs a cleared cache, refilled on the next walks.
  if (status == 0) leaseguard::note_code_unloaded();
  return status;
}
