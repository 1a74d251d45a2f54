/* fork() while other threads allocate: 4 threads allocate and free continuously, each
 * leaking exactly one 555-byte buffer, while the main thread forks 20 children. Each child
 * leaks exactly one 99-byte buffer of its own and exits normally. No child may report the
 * parent's allocations, and the parent's accounting must stay exact. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

enum { kThreads = 4, kChildren = 20 };

static CUcontext g_context;
static volatile int g_stop = 0;

static VICTIM_NOINLINE void thread_leak(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 555));
}

static VICTIM_NOINLINE void child_leak(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 99));
}

static void *churn(void *unused) {
  (void)unused;
  CHECK(cuCtxSetCurrent(g_context));
  thread_leak();
  while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
    CUdeviceptr buffer;
    CHECK(cuMemAlloc_v2(&buffer, 64));
    CHECK(cuMemFree_v2(buffer));
  }
  return NULL;
}

int main(void) {
  g_context = victim_primary_context();
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, churn, NULL);
  int failures = 0;
  for (int i = 0; i < kChildren; ++i) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      CHECK(cuCtxSetCurrent(g_context));
      child_leak();
      exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  printf("fork_storm done, %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
