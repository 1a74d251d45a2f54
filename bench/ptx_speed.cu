// The simulator's PTX interpreter at work on the two kernels its speed budget names: a vector
// add and a tiled matrix multiply (bench/ptx_speed runs it and reads the simulator's
// per-launch line). Each result is checked, so a fast wrong answer is no figure.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kTile = 16;

__global__ void add_vectors(const float *a, const float *b, float *c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void tiled_multiply(const float *a, const float *b, float *c, int width) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, column = blockIdx.x * kTile + threadIdx.x;
  float sum = 0;
  for (int t = 0; t < width / kTile; ++t) {
    as[threadIdx.y][threadIdx.x] = a[row * width + t * kTile + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t * kTile + threadIdx.y) * width + column];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  c[row * width + column] = sum;
}

static void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 22;
  const int width = argc > 2 ? std::atoi(argv[2]) : 256;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1000), b[i] = 0.5f;
  float *da, *db, *dc;
  check(cudaMalloc(&da, n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&db, n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dc, n * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy");
  add_vectors<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  check(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost), "add_vectors");
  for (int i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i]) return std::fprintf(stderr, "add_vectors: wrong at %d\n", i), 1;

  const int cells = width * width;
  std::vector<float> ma(cells), mb(cells), mc(cells);
  for (int i = 0; i < cells; ++i) ma[i] = static_cast<float>(i % 7), mb[i] = static_cast<float>(i % 5) * 0.25f;
  float *dma, *dmb, *dmc;
  check(cudaMalloc(&dma, cells * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dmb, cells * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dmc, cells * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(dma, ma.data(), cells * sizeof(float), cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(dmb, mb.data(), cells * sizeof(float), cudaMemcpyHostToDevice), "copy");
  tiled_multiply<<<dim3(width / kTile, width / kTile), dim3(kTile, kTile)>>>(dma, dmb, dmc, width);
  check(cudaMemcpy(mc.data(), dmc, cells * sizeof(float), cudaMemcpyDeviceToHost), "tiled_multiply");
  for (int r = 0; r < width; r += 37)
    for (int col = 0; col < width; col += 41) {
      float want = 0;
      for (int k = 0; k < width; ++k) want += ma[r * width + k] * mb[k * width + col];
      if (std::fabs(want - mc[r * width + col]) > 1e-2f * std::fabs(want) + 1e-3f)
        return std::fprintf(stderr, "tiled_multiply: wrong at %d,%d\n", r, col), 1;
    }
  for (float *p : {da, db, dc, dma, dmb, dmc}) cudaFree(p);
  std::printf("results checked\n");
  return 0;
}
