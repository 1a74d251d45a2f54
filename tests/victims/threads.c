/* Threads allocating and freeing at once, half of the frees on another thread than the
 * allocation's. Each of kThreads threads allocates kPerThread buffers; every buffer but the
 * last of each thread is freed by the next thread. So exactly kThreads allocations leak,
 * each of 777 bytes, all from leak_last_one, whose pointers are dropped (direct leaks). */
#include <pthread.h>

#include "victim.h"

enum { kThreads = 8, kPerThread = 200 };

static CUcontext g_context;
static CUdeviceptr g_buffers[kThreads][kPerThread];
static pthread_barrier_t g_allocated;

static VICTIM_NOINLINE void leak_last_one(void) {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, 777));
}

static void *worker(void *argument) {
  int index = (int)(long)argument;
  CHECK(cuCtxSetCurrent(g_context));
  for (int i = 0; i < kPerThread - 1; ++i) {
    CHECK(cuMemAlloc_v2(&g_buffers[index][i], 64 + (size_t)i));
    if (i % 2 == 0) { /* free half at once, on this thread */
      CHECK(cuMemFree_v2(g_buffers[index][i]));
      g_buffers[index][i] = 0;
    }
  }
  leak_last_one();
  pthread_barrier_wait(&g_allocated);
  /* The other half is freed by the next thread. */
  int other = (index + 1) % kThreads;
  for (int i = 0; i < kPerThread - 1; ++i)
    if (g_buffers[other][i] != 0) CHECK(cuMemFree_v2(g_buffers[other][i]));
  return NULL;
}

int main(void) {
  g_context = victim_primary_context();
  pthread_barrier_init(&g_allocated, NULL, kThreads);
  pthread_t threads[kThreads];
  for (long i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, worker, (void *)i);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  printf("threads done\n");
  return 0;
}
