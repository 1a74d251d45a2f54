// The API library's dlclose. Without the preload the API runs the core itself, and its
// address-keyed caches (core/code_generation.h) must learn of unloads as the preload's do
// (interpose/dlclose_hook.cpp): otherwise a library loaded where an unloaded one was is
// walked with the old one's frame rules and reported under its name. A program that links
// the API has it ahead of the C library in the lookup order. With the preload loaded, the
// preload's dlclose comes first and calls this one as the next; each notes the unload in
// its own core, which costs the unused one a cleared cache.
#include <dlfcn.h>

#include <atomic>

#include "code_generation.h"

extern "C" __attribute__((visibility("default"))) int dlclose(void *handle) {
  using Dlclose = int (*)(void *);
  static std::atomic<Dlclose> real_dlclose{nullptr};
  Dlclose function = real_dlclose.load(std::memory_order_acquire);
  if (function == nullptr) {
    // RTLD_NEXT from this library: the C library's dlclose, or an interposer's after this one.
    function = reinterpret_cast<Dlclose>(dlsym(RTLD_NEXT, "dlclose"));
    if (function == nullptr) return -1;  // no dlclose in the process: nothing was loaded by dlopen
    real_dlclose.store(function, std::memory_order_release);
  }
  const int status = function(handle);
  if (status == 0) leaseguard::note_code_unloaded();
  return status;
}
