// SIGTERM and SIGINT are journaled when they arrive, before the program's own handler or the
// default action runs, and end nothing: schedulers send SIGTERM to start a graceful shutdown
// (SIGKILL comes later), so a program that frees everything in its handler and exits is
// reported as it ended, clean. One that dies of the signal (its default action, or a later
// SIGKILL) is reported from its journal as any killed process is, with the signal named.
//
// leaseguard keeps its handler installed for both signals and presents the program with the
// disposition the program asked for: sigaction() and signal() are interposed for these two
// signals only, record the program's action, and return it as the old one. When the signal
// arrives, leaseguard's handler journals it (async-signal-safely: one record) and then runs
// the program's action as the kernel would have: its handler with its mask
// and flags, nothing for SIG_IGN, or the default action (terminate) by re-raising. A signal
// the program ignores is really ignored, and never journaled.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "preload_state.h"
#include "real_dlsym.h"
#include "signal_hooks.h"

namespace leaseguard::interpose {
namespace {

using SigactionFunction = int (*)(int, const struct sigaction *, struct sigaction *);

SigactionFunction real_sigaction() {
  static SigactionFunction function = real_symbol<SigactionFunction>(RTLD_NEXT, "sigaction");
  return function;
}

constexpr int kSignals[] = {SIGTERM, SIGINT};
// The program's view of each signal's disposition, and whether leaseguard's handler is in
// place (it is not while the program ignores the signal).
struct Disposition {
  struct sigaction program;
  bool ours_installed;
};
Disposition g_dispositions[2];
bool g_active = false;

int index_of(int signal_number) {
  for (int i = 0; i < 2; ++i)
    if (kSignals[i] == signal_number) return i;
  return -1;
}

void on_termination_signal(int signal_number, siginfo_t *info, void *context);

// What the kernel takes of a program's action: its handler, flags and the signals of its
// mask (glibc puts its own restorer in). Never the whole struct: glibc's sigemptyset clears
// only the words of the mask that signals use, and nothing sets the restorer, so the rest
// of a `struct sigaction` built on the stack holds whatever the stack held, pointers to the
// program's heap included. Kept in this library's globals, they would make the blocks they
// point to leaseguard's own at a classification (reachability_scan.cpp: its globals are
// owners' roots), and every device allocation that only those blocks' contents reach would
// read lost: all of a Python program's objects were, through the handler the interpreter
// installs for SIGINT.
struct sigaction meaningful_part(const struct sigaction &action) {
  struct sigaction kept {};
  if (action.sa_flags & SA_SIGINFO) kept.sa_sigaction = action.sa_sigaction;
  else kept.sa_handler = action.sa_handler;
  kept.sa_flags = action.sa_flags;
  sigemptyset(&kept.sa_mask);
  for (int signal_number = 1; signal_number < NSIG; ++signal_number)
    if (sigismember(&action.sa_mask, signal_number) == 1) sigaddset(&kept.sa_mask, signal_number);
  return kept;
}

// leaseguard's handler, with the program's flags and mask: whether a system call the signal
// interrupts is restarted (SA_RESTART) or fails with EINTR, the alternate stack, and what
// is blocked while the handler runs are the program's choices, and the kernel applies them
// to the handler it has.
struct sigaction our_action(const struct sigaction &program) {
  struct sigaction action {};
  action.sa_sigaction = on_termination_signal;
  action.sa_flags = SA_SIGINFO | (program.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
  action.sa_mask = program.sa_mask;
  return action;
}

bool ignores(const struct sigaction &action) { return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN; }

// Puts the real disposition in line with the program's: ours, unless it ignores the signal.
int apply(int index) {
  Disposition &disposition = g_dispositions[index];
  if (ignores(disposition.program)) {
    disposition.ours_installed = false;
    return real_sigaction()(kSignals[index], &disposition.program, nullptr);
  }
  struct sigaction ours = our_action(disposition.program);
  disposition.ours_installed = true;
  return real_sigaction()(kSignals[index], &ours, nullptr);
}

void on_termination_signal(int signal_number, siginfo_t *info, void *context) {
  const int saved_errno = errno;
  const int index = index_of(signal_number);
  if (index < 0) return;
  const struct sigaction program = g_dispositions[index].program;
  const bool default_action = !(program.sa_flags & SA_SIGINFO) && program.sa_handler == SIG_DFL;
  if (Tracker *tracker = recording_tracker()) tracker->note_signal_from_signal_handler(signal_number, default_action);

  if (default_action) {
    // Terminate as the kernel would have: with the default disposition, the signal (blocked
    // while this handler runs) is delivered as soon as the handler returns.
    struct sigaction defaults {};
    defaults.sa_handler = SIG_DFL;
    real_sigaction()(signal_number, &defaults, nullptr);
    raise(signal_number);
    errno = saved_errno;
    return;
  }
  // The program's handler (the kernel blocked the mask it asked for: our_action).
  if (program.sa_flags & SA_RESETHAND) {
    g_dispositions[index].program = {};
    g_dispositions[index].program.sa_handler = SIG_DFL;
    apply(index);
  }
  errno = saved_errno;
  if (program.sa_flags & SA_SIGINFO) program.sa_sigaction(signal_number, info, context);
  else program.sa_handler(signal_number);
}

}  // namespace

void install_termination_handlers() noexcept {
  if (real_sigaction() == nullptr) return;
  for (int i = 0; i < 2; ++i) {
    if (real_sigaction()(kSignals[i], nullptr, &g_dispositions[i].program) != 0) return;
  }
  for (int i = 0; i < 2; ++i) apply(i);
  g_active = true;
}

}  // namespace leaseguard::interpose

using namespace leaseguard::interpose;

extern "C" __attribute__((visibility("default"))) int sigaction(int signal_number, const struct sigaction *action,
                                                                struct sigaction *old_action) {
  const int index = g_active ? index_of(signal_number) : -1;
  if (index < 0) {
    SigactionFunction real = real_sigaction();
    if (real == nullptr) {
      errno = ENOSYS;
      return -1;
    }
    return real(signal_number, action, old_action);
  }
  // Block the signal while its recorded disposition changes, so the handler never sees
  // half of an update.
  sigset_t just_this, previous;
  sigemptyset(&just_this);
  sigaddset(&just_this, signal_number);
  pthread_sigmask(SIG_BLOCK, &just_this, &previous);
  if (old_action != nullptr) *old_action = g_dispositions[index].program;
  int result = 0;
  if (action != nullptr) {
    g_dispositions[index].program = meaningful_part(*action);
    result = apply(index);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return result;
}

extern "C" __attribute__((visibility("default"))) sighandler_t signal(int signal_number, sighandler_t handler) {
  const int index = g_active ? index_of(signal_number) : -1;
  if (index < 0) {
    // glibc's signal() has BSD semantics: a handler stays installed and calls restart.
    struct sigaction action {
    }, old_action{};
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    SigactionFunction real = real_sigaction();
    if (real == nullptr || real(signal_number, &action, &old_action) != 0) return SIG_ERR;
    return old_action.sa_handler;
  }
  struct sigaction action {
  }, old_action{};
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal_number, &action, &old_action) != 0) return SIG_ERR;
  if (old_action.sa_flags & SA_SIGINFO)
    return reinterpret_cast<sighandler_t>(reinterpret_cast<void *>(old_action.sa_sigaction));
  return old_action.sa_handler;
}
