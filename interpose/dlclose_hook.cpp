// leaseguard's dlclose: the library's own, then the address-keyed caches are told that code
// went away (core/code_generation.h), so a library later loaded at the same addresses is
// walked with its own frame rules and reported under its own name.
#include <dlfcn.h>

#include "code_generation.h"
#include "real_dlsym.h"

extern "C" __attribute__((visibility("default"))) int dlclose(void *handle) {
  using Dlclose = int (*)(void *);
  static Dlclose real_dlclose = nullptr;
  Dlclose function = __atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE);
  if (function == nullptr) {
    // RTLD_NEXT from the preload is the C library's dlclose.
    function = reinterpret_cast<Dlclose>(leaseguard::interpose::real_dlsym()(RTLD_NEXT, "dlclose"));
    if (function == nullptr) return -1;  // no dlclose in the process: nothing was loaded by dlopen
    __atomic_store_n(&real_dlclose, function, __ATOMIC_RELEASE);
  }
  const int status = function(handle);
  // Only a successful call can have unmapped anything; one that dropped a reference without
  // unloading costs a cleared cache, refilled on the next walks.
  if (status == 0) leaseguard::note_code_unloaded();
  return status;
}
