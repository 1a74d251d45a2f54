/* A job whose lease's end must be counted as its report counts it: it holds 1 MiB on purpose
 * (a global points to it) and drops 5,403 bytes, says "ready" and waits to be ended
 * (tests/integration/lease_authority_test.cpp, the metrics' lost and reachable counters).
 * Usage: lease_accounts */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "victim.h"

__attribute__((used)) CUdeviceptr g_held;

static VICTIM_NOINLINE void drop(size_t bytes) {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, bytes));
}

/* Overwrites the dead stack below the caller, where a stale copy of the dropped pointer lies. */
static VICTIM_NOINLINE void scrub_stack(void) {
  volatile char area[16384];
  for (size_t i = 0; i < sizeof area; ++i) area[i] = 0;
}

int main(void) {
  victim_primary_context();
  CHECK(cuMemAlloc_v2(&g_held, 1u << 20));
  drop(5403);
  scrub_stack();
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
