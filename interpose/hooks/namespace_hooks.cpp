// unshare() and setns() that fail in a multithreaded process behave as without leaseguard.
//
// The kernel refuses unshare(CLONE_NEWUSER) (and CLONE_VM, CLONE_SIGHAND, CLONE_THREAD) and
// setns() into a user or mount namespace to a process with more than one thread, and
// leaseguard may have added one (the journal's page-fault thread, the lease watchdog, the
// thread on the lease authority's control page). So
// these calls join leaseguard's threads first and let them start again after: a program
// that was single-threaded is single-threaded for the call. A namespace change through the
// raw system call (syscall(SYS_unshare, ...)) is not seen (docs/reliability.md).
#include <dlfcn.h>
#include <sched.h>

#include <cerrno>

#include "preload_state.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

// Runs `call` with leaseguard's threads joined if `single_threaded_only`.
template <typename Call>
int with_threads_suspended(bool single_threaded_only, Call call) {
  Tracker *tracker = single_threaded_only ? recording_tracker() : nullptr;
  if (tracker != nullptr) tracker->suspend_threads();
  const int result = call();
  const int saved = errno;
  if (tracker != nullptr) tracker->resume_threads();
  errno = saved;
  return result;
}

}  // namespace
}  // namespace leaseguard::interpose

using namespace leaseguard::interpose;

extern "C" __attribute__((visibility("default"))) int unshare(int flags) {
  using UnshareFunction = int (*)(int);
  static const UnshareFunction real = real_symbol<UnshareFunction>(RTLD_NEXT, "unshare");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const bool single = (flags & (CLONE_NEWUSER | CLONE_VM | CLONE_SIGHAND | CLONE_THREAD)) != 0;
  return with_threads_suspended(single, [&] { return real(flags); });
}

extern "C" __attribute__((visibility("default"))) int setns(int fd, int nstype) {
  using SetnsFunction = int (*)(int, int);
  static const SetnsFunction real = real_symbol<SetnsFunction>(RTLD_NEXT, "setns");
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // nstype 0: any namespace the descriptor names, a user or mount namespace among them.
  const bool single = nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS)) != 0;
  return with_threads_suspended(single, [&] { return real(fd, nstype); });
}
