/* A service that keeps running until told to stop (tests/integration/running_process_test.cpp):
 * it allocates two buffers, keeps one in a global and drops the other, creates the file
 * READY, then waits until a line can be read from the FIFO GATE, and exits 0. While it waits,
 * its journal has no end record, and its writer is alive. */
#include <fcntl.h>
#include <unistd.h>

#include "victim.h"

static CUdeviceptr g_kept;

VICTIM_NOINLINE static void allocate_buffers(void) {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, 5000));
  CHECK(cuMemAlloc_v2(&g_kept, 7000));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gated_service READY GATE\n");
    return 2;
  }
  victim_primary_context();
  allocate_buffers();
  const int ready = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (ready < 0) return 3;
  close(ready);
  const int gate = open(argv[2], O_RDONLY | O_CLOEXEC);  // blocks until the test opens it to write
  char line[8];
  while (gate >= 0 && read(gate, line, sizeof line) > 0) {
  }
  printf("stopped\n");
  return 0;
}
