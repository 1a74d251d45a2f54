// The table of hooked entry points and their real functions.
#include "hook_table.h"

#include <dlfcn.h>

#include <cstring>

#include "lg_cuda.h"
#include "lg_hip.h"
#include "log.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

// The wrappers are the preload's exported definitions of the driver's and the HIP runtime's
// names (cuda_hooks.cpp, cuda_resource_hooks.cpp, hip_hooks.cpp).
const HookInfo kHooks[] = {
#define LG_HOOK_INFO(name, family, since, per_thread) \
  {#name, family, since, per_thread, reinterpret_cast<void *>(&::name)},
    LG_HOOKED_FUNCTIONS(LG_HOOK_INFO)
#undef LG_HOOK_INFO
};
static_assert(sizeof kHooks / sizeof kHooks[0] == kHookCount);

}  // namespace

std::atomic<void *> detail::g_real[kHookCount];

const HookInfo &hook_info(int index) noexcept { return kHooks[index]; }

int find_hook(const char *name) noexcept {
  if (name == nullptr) return -1;
  const bool cuda = name[0] == 'c' && name[1] == 'u';
  const bool hip = name[0] == 'h' && name[1] == 'i' && name[2] == 'p';
  if (!cuda && !hip) return -1;
  for (int i = 0; i < kHookCount; ++i)
    if (std::strcmp(kHooks[i].name, name) == 0) return i;
  return -1;
}

bool is_wrapper(const void *function) noexcept {
  for (const HookInfo &hook : kHooks)
    if (hook.wrapper == function) return true;
  return false;
}

void remember_real(int hook, void *function) noexcept {
  if (function == nullptr || is_wrapper(function)) return;
  void *expected = nullptr;
  detail::g_real[hook].compare_exchange_strong(expected, function, std::memory_order_acq_rel);
}

void *detail::look_up_real_function(Hook hook) noexcept {
  const int index = static_cast<int>(hook);
  // A program linked with -lcuda reaches our definition through its PLT; the driver's is
  // the next one in the global scope after the preload.
  void *function = real_dlsym()(RTLD_NEXT, kHooks[index].name);
  if (function == nullptr) {
    log_warning("%s: no driver or runtime implementation found; returning 'not initialized'", kHooks[index].name);
    return nullptr;
  }
  remember_real(index, function);
  return g_real[index].load(std::memory_order_acquire);
}

}  // namespace leaseguard::interpose
