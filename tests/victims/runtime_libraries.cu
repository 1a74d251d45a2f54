// NVIDIA's libraries' host side on the simulator (tests/integration/runtime_test.cpp). Modes:
//   cublas         a cuBLAS handle with a workspace, created and destroyed
//   cublas-leak    a cuBLAS handle created and never destroyed (its memory is lost with it)
//   cufft          a cuFFT plan created and destroyed
// Prints each library call's status; what the libraries allocate is recorded by leaseguard
// as ever.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdio.h>
#include <string.h>

namespace {

int run_cublas(bool destroy) {
  cublasHandle_t handle;
  cublasStatus_t blas = cublasCreate(&handle);
  printf("cublasCreate: %s\n", cublasGetStatusName(blas));
  if (blas != CUBLAS_STATUS_SUCCESS) return 1;
  if (!destroy) {
    handle = nullptr;  // the only reference, dropped: the handle's device memory is lost
    return 0;
  }
  void *workspace = nullptr;
  if (cudaMalloc(&workspace, 4 << 20) != cudaSuccess) return 1;
  printf("cublasSetWorkspace: %s\n", cublasGetStatusName(cublasSetWorkspace(handle, workspace, 4 << 20)));
  printf("cublasDestroy: %s\n", cublasGetStatusName(cublasDestroy(handle)));
  return cudaFree(workspace) == cudaSuccess ? 0 : 1;
}

int run_cufft() {
  cufftHandle plan;
  cufftResult fft = cufftPlan1d(&plan, 1024, CUFFT_C2C, 1);
  printf("cufftPlan1d: %d\n", static_cast<int>(fft));
  if (fft != CUFFT_SUCCESS) return 1;
  printf("cufftDestroy: %d\n", static_cast<int>(cufftDestroy(plan)));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "cublas";
  if (strcmp(mode, "cublas") == 0) return run_cublas(true);
  if (strcmp(mode, "cublas-leak") == 0) return run_cublas(false);
  if (strcmp(mode, "cufft") == 0) return run_cufft();
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
