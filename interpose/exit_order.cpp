#include "exit_order.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "real_dlsym.h"
#include "tracker.h"

// This library's: the handler lives as long as it, which is never unloaded (-z nodelete).
extern "C" void *__dso_handle __attribute__((visibility("hidden")));

namespace leaseguard::interpose {
namespace {

using CxaAtexit = int (*)(void (*)(void *), void *, void *);

// The next definition of `name` (libc's), found on first use: registrations begin before
// the preload's constructor runs (its own statics', the C++ runtime's).
template <typename Function>
Function next_definition(std::atomic<Function> &slot, const char *name) noexcept {
  Function found = slot.load(std::memory_order_acquire);
  if (found == nullptr) {
    found = real_symbol<Function>(RTLD_NEXT, name);
    slot.store(found, std::memory_order_release);
  }
  return found;
}

CxaAtexit real_cxa_atexit() noexcept {
  static std::atomic<CxaAtexit> function{nullptr};
  return next_definition(function, "__cxa_atexit");
}

std::atomic<void (*)(void *)> g_first{nullptr};

// The handler's registrations after the first, at most. libc never reuses an entry below a
// live one, so a program that loads and unloads a library with a static destructor in a
// loop would otherwise grow libc's list by an entry of ours (and one of its own) a cycle.
// Past the bound (~2 MiB of entries), later statics' destructors run before the handler.
constexpr uint64_t kMostRepeats = 1 << 16;
std::atomic<uint64_t> g_repeats{0};

// ---- thread_local destructors ----

using CxaThreadAtexit = int (*)(void (*)(void *), void *, void *);

CxaThreadAtexit real_cxa_thread_atexit() noexcept {
  static std::atomic<CxaThreadAtexit> function{nullptr};
  return next_definition(function, "__cxa_thread_atexit_impl");
}

// Where libc's exit() lies: a return address inside it means the thread is running exit.
struct CodeSpan {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};

CodeSpan exit_function() noexcept {
  Dl_info info{};
  void *entry = nullptr;  // the symbol's ElfW(Sym)
  if (dladdr1(reinterpret_cast<void *>(&std::exit), &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr ||
      info.dli_saddr == nullptr)
    return CodeSpan{};
  const auto *symbol = static_cast<const ElfW(Sym) *>(entry);
  const auto begin = reinterpret_cast<uintptr_t>(info.dli_saddr);
  return CodeSpan{begin, begin + symbol->st_size};
}

struct ExitSearch {
  CodeSpan exit;
  int frames_left;
  bool found;
};

_Unwind_Reason_Code look_for_exit(_Unwind_Context *context, void *argument) {
  auto &search = *static_cast<ExitSearch *>(argument);
  int before_instruction = 0;
  const auto ip = static_cast<uintptr_t>(_Unwind_GetIPInfo(context, &before_instruction));
  const uintptr_t pc = before_instruction != 0 ? ip : ip - 1;
  search.found = pc >= search.exit.begin && pc < search.exit.end;
  return search.found || ip == 0 || --search.frames_left == 0 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// Whether the calling thread is inside exit(): a few frames up, under the destructors' runner.
bool thread_is_exiting() noexcept {
  static const CodeSpan exit_code = exit_function();
  if (exit_code.begin == exit_code.end) return false;
  ExitSearch search{exit_code, 8, false};
  _Unwind_Backtrace(look_for_exit, &search);
  return search.found;
}

// A thread_local destructor of the handler's: runs it where the thread is in exit().
void run_if_exiting(void *) {
  void (*const first)(void *) = g_first.load(std::memory_order_acquire);
  if (first != nullptr && thread_is_exiting()) first(nullptr);
}

// The handler's registrations on one thread, at most (as kMostRepeats, for a thread).
constexpr uint32_t kMostThreadRepeats = 1 << 12;
thread_local uint32_t t_thread_repeats __attribute__((tls_model("initial-exec"))) = 0;

std::atomic<void (*)(void *)> g_parents_work{nullptr};

void parents_exit(void *);

// In a later child's exit, at its atexit stage: the thread_local stage it has passed now.
void hand_on_to_parent(void *) {
  if (CxaThreadAtexit next = real_cxa_thread_atexit()) next(parents_exit, nullptr, &__dso_handle);
}

// A thread_local destructor on the thread that made the child. In the parent, where that
// thread is in exit(): the work. In a later child's exit (its thread_local stage, where a new
// destructor would run at once, and again): handed on from the child's atexit stage.
void parents_exit(void *) {
  Tracker *tracker = Tracker::instance();
  if (tracker == nullptr) return;
  if (!tracker->in_own_process()) {
    if (CxaAtexit next = real_cxa_atexit()) next(hand_on_to_parent, nullptr, &__dso_handle);
    return;
  }
  void (*const work)(void *) = g_parents_work.load(std::memory_order_acquire);
  if (work != nullptr && thread_is_exiting()) work(nullptr);
}

}  // namespace

void run_at_parents_exit(void (*work)(void *)) noexcept {
  if (g_parents_work.exchange(work, std::memory_order_acq_rel) == work) return;  // arranged already
  hand_on_to_parent(nullptr);
}

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

// Every thread_local object's destructor (libstdc++'s __cxa_thread_atexit calls this): the
// handler's own follows it on the thread, to run first there if the thread is in exit().
extern "C" __attribute__((visibility("default"))) int __cxa_thread_atexit_impl(void (*function)(void *), void *object,
                                                                               void *dso_symbol) {
  const CxaThreadAtexit next = real_cxa_thread_atexit();
  if (next == nullptr) return -1;
  const int registered = next(function, object, dso_symbol);
  if (registered == 0 && g_first.load(std::memory_order_acquire) != nullptr && function != run_if_exiting &&
      t_thread_repeats < kMostThreadRepeats) {
    ++t_thread_repeats;
    next(run_if_exiting, nullptr, &__dso_handle);
  }
  return registered;
}

}  // namespace leaseguard::interpose
