// The C library's own dlsym and the handles of loaded objects (real_dlsym.h).
#include "real_dlsym.h"

#include <dlfcn.h>

extern "C" {

void *leaseguard_real_dlsym = nullptr;

void *leaseguard_resolve_real_dlsym() {
  // dlvsym is not interposed; RTLD_NEXT from here is the C library. GLIBC_2.34 is the
  // current default version of dlsym, GLIBC_2.2.5 the one older programs bind to.
  void *function = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (function == nullptr) function = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&leaseguard_real_dlsym, function, __ATOMIC_RELEASE);
  return function;
}

}  // extern "C"

namespace leaseguard::interpose {

void *handle_of_object_containing(const void *address) noexcept {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr || info.dli_fname[0] == '\0') return nullptr;
  // The reference this takes is never dropped: the driver stays loaded for the process.
  return dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
}

}  // namespace leaseguard::interpose
