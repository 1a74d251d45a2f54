/* A service that never exits by itself (tests/integration/live_check_test.cpp): it reads
 * commands on stdin, one a line, and answers each on stdout.
 *
 *   serve N   its four worker threads serve N requests in all; it answers "served TOTAL"
 *   quit C    it frees its cache, answers "quit: EINTR E", and exits with status C
 *
 * Each request allocates a buffer (4096 bytes, at one call site). Every tenth fails, and its
 * error path drops the buffer (the leak); the others keep theirs in a bounded cache of 16,
 * whose oldest entry is freed when a new one comes. Between requests every thread blocks in
 * read(2) on a pipe: a read or write interrupted by anything leaseguard does (EINTR) is
 * counted and told at the end. It prints its pid first, for `leaseguard check`. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

enum { kWorkers = 4, kCacheSize = 16, kBufferBytes = 4096, kDropOneIn = 10 };

static CUcontext g_context;
static int g_requests[2]; /* a byte per request to serve */
static int g_served[2];   /* a byte per request served */
static pthread_mutex_t g_cache_mutex = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr g_cache[kCacheSize];
static unsigned long g_cache_next;
static unsigned long g_next_request;
static volatile int g_interrupted; /* EINTRs seen */

/* A whole byte moved, retrying only what is not an interruption: an EINTR is counted. */
static int move_byte(int fd, int writing) {
  char byte = 'r';
  for (;;) {
    const ssize_t done = writing ? write(fd, &byte, 1) : read(fd, &byte, 1);
    if (done == 1) return 1;
    if (done < 0 && errno == EINTR) {
      __atomic_add_fetch(&g_interrupted, 1, __ATOMIC_RELAXED);
      continue;
    }
    return 0;
  }
}

static void cache_keep(CUdeviceptr buffer) {
  pthread_mutex_lock(&g_cache_mutex);
  CUdeviceptr *slot = &g_cache[g_cache_next++ % kCacheSize];
  if (*slot != 0) CHECK(cuMemFree_v2(*slot));
  *slot = buffer;
  pthread_mutex_unlock(&g_cache_mutex);
}

/* One request: the buffer goes to the cache, or on the error path is dropped. */
VICTIM_NOINLINE static void handle_request(unsigned long number) {
  CUdeviceptr buffer = 0;
  CHECK(cuMemAlloc_v2(&buffer, kBufferBytes));
  if (number % kDropOneIn == kDropOneIn - 1) return; /* the error path forgets to free it */
  cache_keep(buffer);
}

static void *worker(void *unused) {
  (void)unused;
  CHECK(cuCtxSetCurrent(g_context));
  while (move_byte(g_requests[0], 0)) {
    handle_request(__atomic_fetch_add(&g_next_request, 1, __ATOMIC_RELAXED));
    if (!move_byte(g_served[1], 1)) break;
  }
  return NULL;
}

int main(void) {
  g_context = victim_primary_context();
  if (pipe(g_requests) != 0 || pipe(g_served) != 0) return 2;
  pthread_t workers[kWorkers];
  for (int i = 0; i < kWorkers; ++i)
    if (pthread_create(&workers[i], NULL, worker, NULL) != 0) return 2;
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  unsigned long total = 0;
  char line[64];
  while (fgets(line, sizeof line, stdin) != NULL) {
    unsigned long count = 0;
    int code = 0;
    if (sscanf(line, "serve %lu", &count) == 1) {
      for (unsigned long i = 0; i < count; ++i) move_byte(g_requests[1], 1);
      for (unsigned long i = 0; i < count; ++i) move_byte(g_served[0], 0);
      total += count;
      printf("served %lu\n", total);
      fflush(stdout);
    } else if (sscanf(line, "quit %d", &code) == 1) {
      close(g_requests[1]); /* the workers' reads end */
      for (int i = 0; i < kWorkers; ++i) pthread_join(workers[i], NULL);
      for (int i = 0; i < kCacheSize; ++i)
        if (g_cache[i] != 0) CHECK(cuMemFree_v2(g_cache[i]));
      printf("quit: EINTR %d\n", g_interrupted);
      return code;
    }
  }
  return 2;
}
