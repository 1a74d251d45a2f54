/* Preloaded beside leaseguard, stands in for gVisor's vDSO, which answers CLOCK_MONOTONIC
 * and CLOCK_REALTIME itself and sends every other clock to its kernel: here
 * CLOCK_MONOTONIC_COARSE costs system calls, as many as make a read take a microsecond or
 * so, as one into gVisor's kernel does. Every other clock is the C library's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

int clock_gettime(clockid_t clock, struct timespec *now) {
  if (clock == CLOCK_MONOTONIC_COARSE) {
    long result = 0;
    for (int i = 0; i < 6; ++i) result = syscall(SYS_clock_gettime, clock, now);
    return (int)result;
  }
  static clock_gettime_fn next;
  if (next == NULL) next = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  return next(clock, now);
}
