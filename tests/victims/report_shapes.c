/* The two ends a report must stay useful at (the HTML page's tests and benchmark):
 *   many N [S]   N leaks (default 100000) from S distinct stacks (default N, at most 131072):
 *                leak i goes through level k by call site 1 or 2 as bit k of i % S says, 17
 *                levels deep, all stacks sharing their 34 frames;
 *   short_leases a long stretch with nothing happening, then three leases that each leak
 *                1 KiB, crowded into the last moments of the process lease: two short ones
 *                and one that works for a hundred times longer, replacing its buffer every
 *                3 ms. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "leaseguard/leaseguard.h"
#include "victim.h"

static VICTIM_NOINLINE void leak_one(unsigned path, int site) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 256 + (path % 7) * 64 + (unsigned)site));
}

/* Two call sites per level; the argument differs so the compiler cannot fold them into one. */
#define LEVEL(n, next)                                                       \
  static VICTIM_NOINLINE void level##n(unsigned path, int site) {            \
    (void)site;                                                              \
    if (path & (1u << (n))) {                                                \
      next(path, 1);                                                         \
    } else {                                                                 \
      next(path, 2);                                                         \
    }                                                                        \
    __asm__ volatile("" ::: "memory"); /* no tail call: a frame per level */ \
  }
LEVEL(16, leak_one)
LEVEL(15, level16)
LEVEL(14, level15)
LEVEL(13, level14)
LEVEL(12, level13)
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
LEVEL(0, level1)

static double now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static void spin_for_ms(double span) {
  double start = now_ms();
  while (now_ms() - start < span) {
  }
}

/* A lease that leaks the last of its `steps` + 1 buffers. */
static VICTIM_NOINLINE void lease_at_work(const char *name, int steps) {
  leaseguard_lease_t lease = leaseguard_lease_begin(name, 0, LEASEGUARD_REPORT);
  if (lease == 0 || leaseguard_lease_enter(lease) != 0) exit(10);
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 1024));
  for (int step = 0; step < steps; ++step) {
    spin_for_ms(3);
    CUdeviceptr next;
    CHECK(cuMemAlloc_v2(&next, 1024));
    CHECK(cuMemFree_v2(buffer));
    buffer = next;
  }
  if (leaseguard_lease_leave() != 0) exit(11);
  if (leaseguard_lease_end(lease) != 1) exit(12);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "many";
  victim_primary_context();
  if (strcmp(mode, "many") == 0) {
    unsigned count = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 100000;
    unsigned stacks = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : count;
    if (stacks == 0) stacks = 1;
    for (unsigned i = 0; i < count; ++i) level0(i % stacks, 0);
    printf("leaked %u\n", count);
    return 0;
  }
  if (strcmp(mode, "short_leases") == 0) {
    /* The lengths are the shape, not a synchronisation: a stretch over a few times the
     * leases' makes them a sliver of a linear time axis, and so does a busy neighbour that
     * runs far longer (or a short one preempted on a loaded machine). */
    CUdeviceptr kept;
    CHECK(cuMemAlloc_v2(&kept, 4096));
    CHECK(cuMemFree_v2(kept));
    spin_for_ms(200);
    lease_at_work("parse", 0);
    lease_at_work("plan", 0);
    lease_at_work("execute", 10);
    printf("two short leases and a busy one\n");
    return 0;
  }
  fprintf(stderr, "usage: report_shapes many [N [STACKS]] | short_leases\n");
  return 2;
}
