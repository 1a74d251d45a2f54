/* Threads allocating and freeing at once, half of the frees on another thread than the
 * allocation's. Each of kThreads threads allocates kPerThread buffers; every buffer but the
 * last of each thread is freed by the next thread. So exactly kThreads allocations leak,
 * each of 777 bytes, all from leak_last_one, whose pointers are dropped (direct leaks). */
#include <dirent.h>
#include <pthread.h>
#include <string.h>

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

/* Prints the name of every thread the process still has, one "thread: NAME" line each. */
static void print_thread_names(void) {
  DIR *tasks = opendir("/proc/self/task");
  if (tasks == NULL) return;
  for (struct dirent *task; (task = readdir(tasks)) != NULL;) {
    if (task->d_name[0] == '.') continue;
    char path[300], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", task->d_name);
    FILE *comm = fopen(path, "r");
    if (comm == NULL) continue;
    if (fgets(name, sizeof name, comm) != NULL) printf("thread: %s", name);
    fclose(comm);
  }
  closedir(tasks);
}

/* With the argument "names", it also lists its threads once its workers are joined. */
int main(int argc, char **argv) {
  g_context = victim_primary_context();
  pthread_barrier_init(&g_allocated, NULL, kThreads);
  pthread_t threads[kThreads];
  for (long i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, worker, (void *)i);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  printf("threads done\n");
  if (argc > 1 && strcmp(argv[1], "names") == 0) print_thread_names();
  return 0;
}
