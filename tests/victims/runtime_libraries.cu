// NVIDIA's libraries' host side on the simulator (tests/integration/runtime_test.cpp): a
// cuBLAS handle with a workspace, and a cuFFT plan, created and destroyed. Prints each
// library call's status; what it allocated is recorded by leaseguard as ever.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdio.h>

int main() {
  cublasHandle_t handle;
  cublasStatus_t blas = cublasCreate(&handle);
  printf("cublasCreate: %s\n", cublasGetStatusName(blas));
  if (blas == CUBLAS_STATUS_SUCCESS) {
    void *workspace = nullptr;
    if (cudaMalloc(&workspace, 4 << 20) != cudaSuccess) return 1;
    printf("cublasSetWorkspace: %s\n", cublasGetStatusName(cublasSetWorkspace(handle, workspace, 4 << 20)));
    printf("cublasDestroy: %s\n", cublasGetStatusName(cublasDestroy(handle)));
    cudaFree(workspace);
  }
  cufftHandle plan;
  cufftResult fft = cufftPlan1d(&plan, 1024, CUFFT_C2C, 1);
  printf("cufftPlan1d: %d\n", static_cast<int>(fft));
  if (fft == CUFFT_SUCCESS) printf("cufftDestroy: %d\n", static_cast<int>(cufftDestroy(plan)));
  return 0;
}
