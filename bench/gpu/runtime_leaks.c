/* A CUDA runtime API program for bench/gpu/check.sh: on a real driver, through the runtime's
 * own way to the driver (cuGetProcAddress), allocates with cudaMalloc, cudaMallocAsync,
 * cudaMallocManaged and cudaMallocHost, frees one of each and leaks one of each, of sizes
 * the check looks for in the report:
 *   runtime_leaks leaks        leaks 1 MiB + 1, + 2, + 3 and + 4 bytes (in that order)
 *   runtime_leaks pairs N      prints ns per cudaMalloc + cudaFree pair of 256 bytes */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                         \
  do {                                                                      \
    cudaError_t status_ = (call);                                           \
    if (status_ != cudaSuccess) {                                           \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorName(status_)); \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static const size_t kBase = 1 << 20;

static int leaks(void) {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  void *kept[4], *freed;
  CHECK(cudaMalloc(&freed, 4096));
  CHECK(cudaFree(freed));
  CHECK(cudaMalloc(&kept[0], kBase + 1));
  CHECK(cudaMallocAsync(&freed, 4096, stream));
  CHECK(cudaFreeAsync(freed, stream));
  CHECK(cudaMallocAsync(&kept[1], kBase + 2, stream));
  CHECK(cudaMallocManaged(&freed, 4096, cudaMemAttachGlobal));
  CHECK(cudaFree(freed));
  CHECK(cudaMallocManaged(&kept[2], kBase + 3, cudaMemAttachGlobal));
  CHECK(cudaMallocHost(&freed, 4096));
  CHECK(cudaFreeHost(freed));
  CHECK(cudaMallocHost(&kept[3], kBase + 4));
  CHECK(cudaStreamSynchronize(stream));
  printf("leaked 4 allocations\n");
  return 0;
}

static int pairs(long count) {
  void *pointer;
  CHECK(cudaFree(0)); /* creates the context outside the timed loop */
  for (long i = 0; i < count / 10; ++i) {
    CHECK(cudaMalloc(&pointer, 256));
    CHECK(cudaFree(pointer));
  }
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < count; ++i) {
    CHECK(cudaMalloc(&pointer, 256));
    CHECK(cudaFree(pointer));
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("%.1f\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / (double)count);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "leaks") == 0) return leaks();
  if (argc == 3 && strcmp(argv[1], "pairs") == 0 && atol(argv[2]) > 0) return pairs(atol(argv[2]));
  fprintf(stderr, "usage: runtime_leaks leaks | pairs N\n");
  return 2;
}
