/* The program bench/compare times: allocation + free pairs made at the bottom of a 12-deep
 * call chain, so every tool under comparison captures stacks of the same depth.
 *
 *   compare_chain malloc|cuda|cuda-async|hip PAIRS [alternating] [--bytes B] [--threads N]
 *
 * With `alternating`, consecutive pairs come through two call chains that differ in their
 * top frame (level1 or level1b, called from two places), as in a program with more than
 * one allocation site: a tool that remembers the last stack it walked cannot reuse it.
 * malloc: glibc malloc + free of 256 bytes (the peers, LeakSanitizer and heaptrack, track
 * these); cuda: cuMemAlloc_v2 + cuMemFree_v2; cuda-async: cuMemAllocAsync + cuMemFreeAsync
 * on the default stream, as stream-ordered code allocates per operation (one frame more: the
 * stream argument's); hip: hipMalloc + hipFree (leaseguard tracks these; on the simulator, or
 * a real driver). Prints the mean nanoseconds per pair over the
 * timed loop, after a warm-up of PAIRS / 10 pairs: elapsed time, then the CPU time of the
 * whole process (every thread: a tool's own threads count). The driver libraries are opened with
 * dlopen, as the CUDA runtime does, so one binary serves every mode. --bytes sets each
 * allocation's size (256 by default). With --threads N, N threads each make PAIRS pairs at
 * once (each with the context current, for cuda), started together after their warm-ups,
 * and the figures are per pair of all of them: elapsed time over N * PAIRS, so N threads
 * that scale perfectly on N cores read 1/N of one thread's figure.
 *
 * With COMPARE_CHAIN_CPU=N, the program's thread moves to CPU N after the warm-up and stays
 * there for the timed loop. Virtual CPUs of one machine can differ in speed by half or more
 * (one shares its core with another guest's work), so series compared side by side must
 * run their loops on the same one. Only this thread moves: threads a tool started during the
 * warm-up keep their own CPUs, as they would on a machine with idle cores. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*alloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

static alloc_fn g_alloc;
static free_fn g_free;
static size_t g_bytes = 256;
static void *g_cuda_context;
static int (*g_cuda_set_current)(void *);
static volatile uintptr_t g_sink;

static int malloc_alloc(void **pointer, size_t bytes) {
  *pointer = malloc(bytes);
  return *pointer == NULL;
}
static int malloc_free(void *pointer) {
  free(pointer);
  return 0;
}

/* The bottom of the chain: one pair. The driver functions' first parameter is a pointer to
 * a 64-bit device address (CUdeviceptr / void *), the same shape as malloc_alloc's. */
__attribute__((noinline)) static int level12(void) {
  void *pointer = NULL;
  if (g_alloc(&pointer, g_bytes) != 0) return 1;
  g_sink = (uintptr_t)pointer;
  return g_free(pointer);
}

#define LEVEL(n, next)                                       \
  __attribute__((noinline)) static int level##n(void) {      \
    int status = next();                                     \
    __asm__ volatile("" ::: "memory"); /* not a tail call */ \
    return status;                                           \
  }
LEVEL(11, level12)
LEVEL(10, level11)
LEVEL(9, level10)
LEVEL(8, level9)
LEVEL(7, level8)
LEVEL(6, level7)
LEVEL(5, level6)
LEVEL(4, level5)
LEVEL(3, level4)
LEVEL(2, level3)
LEVEL(1, level2)

/* The other top of the chain for `alternating`: level1 with one more instruction, so the
 * compiler cannot fold the two into one function. */
__attribute__((noinline)) static int level1b(void) {
  int status = level2();
  __asm__ volatile("nop" ::: "memory");
  return status;
}

static void *must_open(const char *library) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  if (handle == NULL) {
    fprintf(stderr, "compare_chain: cannot open %s: %s\n", library, dlerror());
    exit(2);
  }
  return handle;
}

static void *must_find(void *handle, const char *name) {
  void *function = dlsym(handle, name);
  if (function == NULL) {
    fprintf(stderr, "compare_chain: no %s\n", name);
    exit(2);
  }
  return function;
}

static void set_up_cuda(void) {
  void *cuda = must_open("libcuda.so.1");
  int (*init)(unsigned) = (int (*)(unsigned))must_find(cuda, "cuInit");
  int (*device_get)(int *, int) = (int (*)(int *, int))must_find(cuda, "cuDeviceGet");
  int (*retain)(void **, int) = (int (*)(void **, int))must_find(cuda, "cuDevicePrimaryCtxRetain");
  int (*set_current)(void *) = (int (*)(void *))must_find(cuda, "cuCtxSetCurrent");
  int device = 0;
  void *context = NULL;
  if (init(0) != 0 || device_get(&device, 0) != 0 || retain(&context, device) != 0 || set_current(context) != 0) {
    fprintf(stderr, "compare_chain: no CUDA device\n");
    exit(2);
  }
  g_cuda_context = context;
  g_cuda_set_current = set_current;
  g_alloc = (alloc_fn)must_find(cuda, "cuMemAlloc_v2");
  g_free = (free_fn)must_find(cuda, "cuMemFree_v2");
}

/* cuda-async: the stream-ordered pair on the default stream, in the shape of the others. */
static int (*g_alloc_async)(void **, size_t, void *);
static int (*g_free_async)(void *, void *);
static int async_alloc(void **pointer, size_t bytes) { return g_alloc_async(pointer, bytes, NULL); }
static int async_free(void *pointer) { return g_free_async(pointer, NULL); }

static void set_up_cuda_async(void) {
  set_up_cuda();
  void *cuda = must_open("libcuda.so.1");
  g_alloc_async = (int (*)(void **, size_t, void *))must_find(cuda, "cuMemAllocAsync");
  g_free_async = (int (*)(void *, void *))must_find(cuda, "cuMemFreeAsync");
  g_alloc = async_alloc;
  g_free = async_free;
}

static void set_up_hip(void) {
  void *hip = must_open("libamdhip64.so.5");
  g_alloc = (alloc_fn)must_find(hip, "hipMalloc");
  g_free = (free_fn)must_find(hip, "hipFree");
}

/* COMPARE_CHAIN_CPU: see above. */
static void move_to_chosen_cpu(void) {
  const char *chosen = getenv("COMPARE_CHAIN_CPU");
  if (chosen == NULL || *chosen == '\0') return;
  char *end = NULL;
  long cpu = strtol(chosen, &end, 10);
  if (*end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE) {
    fprintf(stderr, "compare_chain: COMPARE_CHAIN_CPU=%s is not a CPU number\n", chosen);
    exit(2);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)cpu, &set);
  int error = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (error != 0) {
    fprintf(stderr, "compare_chain: cannot move to CPU %ld: %s\n", cpu, strerror(error));
    exit(2);
  }
}

static double now_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

/* One thread's share with --threads: its warm-up, then its timed pairs once all are ready. */
struct worker {
  pthread_t thread;
  long pairs;
  long alternate;
  int failed;
};
static pthread_barrier_t g_ready; /* the workers and main: the timed loops start together */

static int run_pairs(long pairs, long alternate) {
  for (long i = 0; i < pairs; ++i)
    if (((i & alternate) ? level1b() : level1()) != 0) return 1;
  return 0;
}

static void *worker_main(void *argument) {
  struct worker *self = argument;
  if (g_cuda_set_current != NULL && g_cuda_set_current(g_cuda_context) != 0) self->failed = 1;
  if (!self->failed) self->failed = run_pairs(self->pairs / 10, self->alternate);
  pthread_barrier_wait(&g_ready);
  if (!self->failed) self->failed = run_pairs(self->pairs, self->alternate);
  return NULL;
}

static long positive_number(const char *text, const char *what) {
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value <= 0) {
    fprintf(stderr, "compare_chain: %s takes a positive number, not %s\n", what, text);
    exit(2);
  }
  return value;
}

static void usage(void) {
  fprintf(stderr, "usage: compare_chain malloc|cuda|cuda-async|hip PAIRS [alternating] [--bytes B] [--threads N]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3) usage();
  long alternate = 0; /* odd pairs through level1b */
  long threads = 0;   /* 0: the loop runs on the main thread, as it always did */
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "alternating") == 0) alternate = 1;
    else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) g_bytes = (size_t)positive_number(argv[++i], "--bytes");
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = positive_number(argv[++i], "--threads");
    else usage();
  }
  long pairs = atol(argv[2]);
  if (strcmp(argv[1], "malloc") == 0) {
    g_alloc = malloc_alloc;
    g_free = malloc_free;
  } else if (strcmp(argv[1], "cuda") == 0) {
    set_up_cuda();
  } else if (strcmp(argv[1], "cuda-async") == 0) {
    set_up_cuda_async();
  } else if (strcmp(argv[1], "hip") == 0) {
    set_up_hip();
  } else {
    fprintf(stderr, "compare_chain: unknown mode %s\n", argv[1]);
    return 2;
  }
  if (pairs <= 0) {
    fprintf(stderr, "compare_chain: PAIRS must be positive\n");
    return 2;
  }
  if (threads > 0) {
    struct worker *workers = calloc((size_t)threads, sizeof *workers);
    if (workers == NULL || pthread_barrier_init(&g_ready, NULL, (unsigned)threads + 1) != 0) return 2;
    for (long t = 0; t < threads; ++t) {
      workers[t].pairs = pairs;
      workers[t].alternate = alternate;
      if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]) != 0) {
        fprintf(stderr, "compare_chain: cannot start thread %ld\n", t + 1);
        return 2;
      }
    }
    pthread_barrier_wait(&g_ready);
    double start = now_ns(CLOCK_MONOTONIC);
    double start_cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    int failed = 0;
    for (long t = 0; t < threads; ++t) {
      pthread_join(workers[t].thread, NULL);
      failed |= workers[t].failed;
    }
    double cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - start_cpu;
    double all = (double)pairs * (double)threads;
    printf("%.1f %.1f\n", (now_ns(CLOCK_MONOTONIC) - start) / all, cpu / all);
    free(workers);
    return failed;
  }
  if (run_pairs(pairs / 10, alternate) != 0) return 1;
  move_to_chosen_cpu();
  double start = now_ns(CLOCK_MONOTONIC);
  double start_cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  if (run_pairs(pairs, alternate) != 0) return 1;
  double cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - start_cpu;
  printf("%.1f %.1f\n", (now_ns(CLOCK_MONOTONIC) - start) / (double)pairs, cpu / (double)pairs);
  return 0;
}
