// What this machine charges for the few instructions whose cost depends on the host more
// than on leaseguard: the coarse monotonic clock (a tracked pair reads it once: the
// allocation's time stamp, event_clock.h), a locked add (a pair makes three: the journal
// slot and the table shard's lock, twice), and, for comparison, the time stamp counter and
// the fine clock_gettime, which leaseguard's time stamps used before. bench/compare prints
// them above its table, so that tables from different machines can be read side by side: on
// one virtual machine `rdtsc` costs 11 ns, on another of the same kind 22.
//
// Each figure is the extra time per iteration of a loop of independent arithmetic with the
// instruction against without it, so what the instruction costs amid other work, not its
// latency alone. Medians of 7 rounds. Output: one line,
// "coarse_clock N locked_add N rdtsc N clock_gettime N".
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { kIterations = 2000000, kRounds = 7 };
enum Extra { kNothing, kCoarseClock, kCounter, kLockedAdd, kClock };

static volatile uint64_t g_sink;
static uint64_t g_shared;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// ns per iteration of a loop of 16 multiply-xor steps, with `extra` once per iteration.
static double loop_ns(enum Extra extra) {
  uint64_t work[16] = {0};
  uint64_t sum = 0;
  const double start = now_ns();
  for (uint64_t i = 0; i < kIterations; ++i) {
    for (uint64_t j = 0; j < 16; ++j) work[j] = work[j] * 0x9E3779B97F4A7C15ull ^ (i + j);
    switch (extra) {
      case kNothing: break;
#if defined(__x86_64__)
      case kCounter: sum += __rdtsc(); break;
#else
      case kCounter: break;
#endif
      case kLockedAdd: __atomic_fetch_add(&g_shared, 1, __ATOMIC_RELAXED); break;
      case kCoarseClock: {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
        sum += (uint64_t)t.tv_nsec;
        break;
      }
      case kClock: {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        sum += (uint64_t)t.tv_nsec;
        break;
      }
    }
  }
  const double elapsed = now_ns() - start;
  for (int j = 0; j < 16; ++j) sum += work[j];
  g_sink = sum;
  return elapsed / kIterations;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// The median over rounds of (loop with `extra`) - (loop without), each pair run back to back.
static double cost_ns(enum Extra extra) {
  double differences[kRounds];
  for (int round = 0; round < kRounds; ++round) differences[round] = loop_ns(extra) - loop_ns(kNothing);
  qsort(differences, kRounds, sizeof differences[0], by_value);
  const double median = differences[kRounds / 2];
  return median > 0 ? median : 0;
}

int main(void) {
  loop_ns(kNothing);  // warm-up
  printf("coarse_clock %.1f ", cost_ns(kCoarseClock));
  printf("locked_add %.1f ", cost_ns(kLockedAdd));
#if defined(__x86_64__)
  printf("rdtsc %.1f ", cost_ns(kCounter));
#else
  printf("rdtsc - ");
#endif
  printf("clock_gettime %.1f\n", cost_ns(kClock));
  return 0;
}
