// The hooked entry points' real functions (see hook_table.h).
#include "hook_table.h"

#include <dlfcn.h>

#include <cstring>

#include "log.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

// The preload's definitions of the table's names (interpose/*_hooks.cpp), in the table's
// order. Address constants: the compiler lays them out as data, ready before any code runs
// (the dlsym path may be taken before the preload's constructors).
void *const kWrappers[] = {
#define LG_WRAPPER_OF(name, ...) reinterpret_cast<void *>(&::name),
    LG_ENTRY_POINTS(LG_WRAPPER_OF)
#undef LG_WRAPPER_OF
};
static_assert(sizeof kWrappers / sizeof kWrappers[0] == kEntryPointCount);

}  // namespace

std::atomic<void *> detail::g_real[static_cast<size_t>(Api::Count)];

void *wrapper_of(Api api) noexcept {
  const auto id = static_cast<size_t>(api);
  return id < kEntryPointOf.size() && kEntryPointOf[id] < kEntryPointCount ? kWrappers[kEntryPointOf[id]] : nullptr;
}

Api find_hook(const char *name) noexcept {
  if (name == nullptr) return Api::Unknown;
  const bool cuda = name[0] == 'c' && name[1] == 'u';
  const bool hip = name[0] == 'h' && name[1] == 'i' && name[2] == 'p';
  if (!cuda && !hip) return Api::Unknown;
  for (const EntryPoint &row : kEntryPoints)
    if (std::strcmp(row.name.data(), name) == 0) return row.api;  // the table's names are literals
  return Api::Unknown;
}

bool is_wrapper(const void *function) noexcept {
  for (void *wrapper : kWrappers)
    if (wrapper == function) return true;
  return false;
}

void remember_real(Api api, void *function) noexcept {
  if (api == Api::Unknown || function == nullptr || is_wrapper(function)) return;
  void *expected = nullptr;
  detail::g_real[static_cast<size_t>(api)].compare_exchange_strong(expected, function, std::memory_order_acq_rel);
}

void *forwarded_function(Api api) noexcept {
  if (void *function = detail::g_real[static_cast<size_t>(api)].load(std::memory_order_acquire)) return function;
  return real_dlsym()(RTLD_NEXT, api_name(api).data());
}

void *detail::look_up_real_function(Api api) noexcept {
  const char *name = api_name(api).data();
  // A program linked with -lcuda reaches our definition through its PLT; the driver's is
  // the next one in the global scope after the preload.
  void *function = real_dlsym()(RTLD_NEXT, name);
  if (function == nullptr) {
    log_warning("%s: no driver or runtime implementation found; returning 'not initialized'", name);
    return nullptr;
  }
  remember_real(api, function);
  return g_real[static_cast<size_t>(api)].load(std::memory_order_acquire);
}

}  // namespace leaseguard::interpose
