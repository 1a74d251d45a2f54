/* Allocates, frees some, then is killed by a signal before it can end its leases. The
 * journal alone must still show the live allocations: 8 x 1234 bytes. Arguments: the signal
 * to die of (default SIGKILL); "threads": two more threads leak 5 x 2000 and 3 x 3000 bytes
 * and are still running, each with its run of journal slots half filled, when it dies. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

static CUcontext g_context;
static int g_threads_done = 0;

static VICTIM_NOINLINE void leak_before_death(void) {
  for (int i = 0; i < 16; ++i) {
    CUdeviceptr buffer;
    CHECK(cuMemAlloc_v2(&buffer, 1234));
    if (i % 2 == 1) CHECK(cuMemFree_v2(buffer));
  }
}

/* Leaks `count` allocations, then waits to die with the process. */
static VICTIM_NOINLINE void *leak_on_a_thread(void *argument) {
  const int count = (int)(intptr_t)argument;
  CHECK(cuCtxSetCurrent(g_context));
  for (int i = 0; i < count; ++i) {
    CUdeviceptr buffer;
    CHECK(cuMemAlloc_v2(&buffer, count == 5 ? 2000 : 3000));
  }
  __atomic_add_fetch(&g_threads_done, 1, __ATOMIC_SEQ_CST);
  for (;;) pause();
  return NULL;
}

int main(int argc, char **argv) {
  g_context = victim_primary_context();
  if (argc > 2 && strcmp(argv[2], "threads") == 0) {
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, leak_on_a_thread, (void *)(intptr_t)5);
    pthread_create(&threads[1], NULL, leak_on_a_thread, (void *)(intptr_t)3);
    while (__atomic_load_n(&g_threads_done, __ATOMIC_SEQ_CST) < 2) usleep(1000);
  }
  leak_before_death();
  fflush(stdout);
  raise(argc > 1 ? atoi(argv[1]) : SIGKILL);
  return 0;
}
