// The C library's own dlsym, reached without going through leaseguard's dlsym.
#pragma once

extern "C" {
// Filled on first need; read by the dlsym trampoline (dlsym_x86_64.S).
extern void *leaseguard_real_dlsym __attribute__((visibility("hidden")));
void *leaseguard_resolve_real_dlsym() __attribute__((visibility("hidden")));
}

namespace leaseguard::interpose {

using DlsymFunction = void *(*)(void *, const char *);

inline DlsymFunction real_dlsym() noexcept {
  void *function = __atomic_load_n(&leaseguard_real_dlsym, __ATOMIC_ACQUIRE);
  if (function == nullptr) function = leaseguard_resolve_real_dlsym();
  return reinterpret_cast<DlsymFunction>(function);
}

// `name` as dlsym(handle, name) finds it (RTLD_NEXT, RTLD_DEFAULT or an object's handle),
// typed as the function it is; nullptr where there is none.
template <typename Function>
Function real_symbol(void *handle, const char *name) noexcept {
  return reinterpret_cast<Function>(real_dlsym()(handle, name));
}

// The same, kept in `slot`; whether it was found.
template <typename Function>
bool find_symbol(Function &slot, void *handle, const char *name) noexcept {
  slot = real_symbol<Function>(handle, name);
  return slot != nullptr;
}

// A dlopen handle for the already-loaded object containing `address`, or nullptr. A
// link_map from dladdr1 is not usable as a handle for objects loaded at start-up (their
// search list is empty); dlopen with RTLD_NOLOAD builds it. Takes the loader's lock: never
// call it on the dlsym path.
void *handle_of_object_containing(const void *address) noexcept;

}  // namespace leaseguard::interpose
