/* A workload for crash-consistency tests. Two threads allocate and free device memory at
 * random and log every completed step to LOG (one write(2) per line, O_APPEND):
 *     "A <tid> <address>"  after an allocation returned
 *     "F <tid> <address>"  before the free is called
 * So after the process dies, an allocation is live by the log unless its "F" line follows
 * its "A" line; only each thread's last line can describe a step still in flight.
 * Usage: crash_workload SEED LOG [segv|abort|loop] [STEPS]
 *   loop (default): runs until killed; segv/abort: dies that way after STEPS steps. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "victim.h"

enum { kThreads = 2, kLiveMax = 64 };

static int g_log = -1;
static CUcontext g_context;
static unsigned g_seed;
static const char *g_mode = "loop";
static long g_steps = -1;
static volatile long g_total_steps = 0;

static void log_line(char kind, int thread, CUdeviceptr address) {
  char line[64];
  int length = snprintf(line, sizeof line, "%c %d 0x%llx\n", kind, thread, (unsigned long long)address);
  if (write(g_log, line, (size_t)length) != length) _exit(9);
}

static void maybe_die(void) {
  long step = __atomic_add_fetch(&g_total_steps, 1, __ATOMIC_SEQ_CST);
  if (g_steps < 0 || step != g_steps) return;
  if (strcmp(g_mode, "segv") == 0) *(volatile int *)(uintptr_t)8 = 1;
  if (strcmp(g_mode, "abort") == 0) abort();
}

static void *worker(void *argument) {
  int thread = (int)(intptr_t)argument;
  unsigned state = g_seed * 7919u + (unsigned)thread;
  CUdeviceptr live[kLiveMax];
  int count = 0;
  CHECK(cuCtxSetCurrent(g_context));
  for (;;) {
    state = state * 1103515245u + 12345u;
    if (count < kLiveMax && (count == 0 || (state >> 16) % 3 != 0)) {
      CUdeviceptr address;
      CHECK(cuMemAlloc_v2(&address, 1 + (state >> 8) % 100000));
      log_line('A', thread, address);
      live[count++] = address;
    } else {
      int index = (int)((state >> 16) % (unsigned)count);
      CUdeviceptr address = live[index];
      live[index] = live[--count];
      log_line('F', thread, address);
      CHECK(cuMemFree_v2(address));
    }
    maybe_die();
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  g_seed = (unsigned)atoi(argv[1]);
  g_log = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
  if (argc > 3) g_mode = argv[3];
  if (argc > 4) g_steps = atol(argv[4]);
  if (g_log < 0) return 2;
  g_context = victim_primary_context();
  pthread_t threads[kThreads];
  for (intptr_t i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, worker, (void *)i);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  return 0;
}
