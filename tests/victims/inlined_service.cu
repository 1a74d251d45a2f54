// A request service built as users build it (nvcc -O2 -g, tests/CMakeLists.txt): the typed
// cudaMalloc<T> of cuda_runtime.h inlined into each handler, each handler inlined into main,
// so one return address stands for three calls. Two buffers are dropped, each by a handler
// of its own, and one is kept in a global (reachable). Each allocating line carries a
// `site:` comment the tests find it by (tests/integration/runtime_test.cpp).
#include <cuda_runtime.h>
#include <stdio.h>

static float *g_cache;

// Always inlined, so the test does not depend on the compiler's judgment; at -O2 small static
// functions called once are inlined anyway.
#define INLINED static inline __attribute__((always_inline))

INLINED int warm_cache(size_t count) {
  return cudaMalloc(&g_cache, count * sizeof(float)) == cudaSuccess ? 0 : 1;  // site: warm_cache
}

INLINED int handle_request(size_t count) {
  float *scratch = nullptr;
  if (cudaMalloc(&scratch, count * sizeof(float)) != cudaSuccess) return 1;  // site: handle_request
  return 0;  // scratch dropped
}

INLINED int handle_error(size_t count) {
  double *reply = nullptr;
  if (cudaMalloc(&reply, count * sizeof(double)) != cudaSuccess) return 1;  // site: handle_error
  return 0;  // reply dropped on the error path
}

int main() {
  if (warm_cache(1024) != 0 || handle_request(4096) != 0 || handle_error(8192) != 0) {
    puts("allocation failed");
    return 1;
  }
  puts("served");
  return 0;
}
