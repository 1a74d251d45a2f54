#include "exit_order.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include "real_dlsym.h"

// This library's: the handler lives as long as it, which is never unloaded (-z nodelete).
extern "C" void *__dso_handle __attribute__((visibility("hidden")));

namespace leaseguard::interpose {
namespace {

using CxaAtexit = int (*)(void (*)(void *), void *, void *);

CxaAtexit real_cxa_atexit() noexcept {
  static std::atomic<CxaAtexit> function{nullptr};
  CxaAtexit found = function.load(std::memory_order_acquire);
  if (found == nullptr) {
    found = reinterpret_cast<CxaAtexit>(real_dlsym()(RTLD_NEXT, "__cxa_atexit"));
    function.store(found, std::memory_order_release);
  }
  return found;
}

std::atomic<void (*)(void *)> g_first{nullptr};

// The handler's registrations after the first, at most. libc never reuses an entry below a
// live one, so a program that loads and unloads a library with a static destructor in a
// loop would otherwise grow libc's list by an entry of ours (and one of its own) a cycle.
// Past the bound (~2 MiB of entries), later statics' destructors run before the handler.
constexpr uint64_t kMostRepeats = 1 << 16;
std::atomic<uint64_t> g_repeats{0};

}  // namespace

void run_first_at_exit(void (*handler)(void *)) noexcept {
  g_first.store(handler, std::memory_order_release);
  if (CxaAtexit next = real_cxa_atexit()) next(handler, nullptr, &__dso_handle);
}

// Every registration, the program's and its libraries' (atexit and static destructors).
extern "C" __attribute__((visibility("default"))) int __cxa_atexit(void (*function)(void *), void *argument,
                                                                   void *dso_handle) {
  const CxaAtexit next = real_cxa_atexit();
  if (next == nullptr) return -1;  // no C library behind: as if its list could not grow
  const int registered = next(function, argument, dso_handle);
  void (*const first)(void *) = g_first.load(std::memory_order_acquire);
  // Where the handler's own registration fails (no memory), it keeps its earlier place.
  if (registered == 0 && first != nullptr && function != first &&
      g_repeats.fetch_add(1, std::memory_order_relaxed) < kMostRepeats)
    next(first, nullptr, &__dso_handle);
  return registered;
}

}  // namespace leaseguard::interpose
