/* A program that has a Python interpreter loaded and never starts it (an optional scripting
 * feature, a plugin's dependency): no Python object can hold device memory, so its lost
 * allocations are classified as any program's. Prints "no libpython" and exits 0 where the
 * library is missing. */
#include <dlfcn.h>
#include <stdio.h>

#include "victim.h"

static CUdeviceptr g_held;

static VICTIM_NOINLINE void drop(size_t bytes) {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, bytes));
}

/* ARGV[1], if given: the libpython to load (the tests choose it); else the loader's. */
int main(int argc, char **argv) {
  if ((argc < 2 || argv[1][0] == '\0' || dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) &&
      dlopen("libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL) == NULL &&
      dlopen("libpython3.so", RTLD_NOW | RTLD_GLOBAL) == NULL) {
    printf("no libpython\n");
    return 0;
  }
  victim_primary_context();
  CHECK(cuMemAlloc_v2(&g_held, 1401));
  drop(3401);
  return 0;
}
