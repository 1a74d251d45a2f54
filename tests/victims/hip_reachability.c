/* HIP device memory held and lost: the reachability scan classifies hipMalloc'd memory as
 * it does CUDA's. Sizes: 1101 held by a global, 1102 in a heap struct a global holds, 2101
 * only inside lost device memory (indirect), 3101 the lost table holding it, 3102 dropped. */
#include <stdint.h>

#include "hip_victim.h"

__attribute__((used)) void *g_held;
__attribute__((used)) void **g_struct;

static NOINLINE void *allocate(size_t bytes) {
  void *pointer = NULL;
  CHECK(hipMalloc(&pointer, bytes));
  return pointer;
}

static NOINLINE void lose_table(void) {
  void *table = allocate(3101);
  void *inside = allocate(2101);
  CHECK(hipMemcpy(table, &inside, sizeof inside, hipMemcpyHostToDevice));
}

static NOINLINE void drop(void) { allocate(3102); }

static NOINLINE void scrub_stack(void) {
  volatile char area[16384];
  for (size_t i = 0; i < sizeof area; ++i) area[i] = 0;
}

int main(void) {
  g_held = allocate(1101);
  g_struct = calloc(4, sizeof(void *));
  g_struct[1] = allocate(1102);
  lose_table();
  drop();
  scrub_stack();
  return 0;
}
