/* Allocates, frees some, then is killed by a signal before it can end its leases. The
 * journal alone must still show the live allocations: 8 x 1234 bytes. Argument: the signal
 * to die of (default SIGKILL). */
#include <signal.h>
#include <stdlib.h>

#include "victim.h"

static VICTIM_NOINLINE void leak_before_death(void) {
  for (int i = 0; i < 16; ++i) {
    CUdeviceptr buffer;
    CHECK(cuMemAlloc_v2(&buffer, 1234));
    if (i % 2 == 1) CHECK(cuMemFree_v2(buffer));
  }
}

int main(int argc, char **argv) {
  victim_primary_context();
  leak_before_death();
  fflush(stdout);
  raise(argc > 1 ? atoi(argv[1]) : SIGKILL);
  return 0;
}
