/* Built with the toolkit's real libcudart_static.a. On the simulated driver, the runtime's
 * driver lookups (dlopen + cuGetProcAddress) go through leaseguard, which wraps the
 * allocation family; then cudaMalloc fails because the simulator cannot provide the
 * runtime's private export tables. The program reports the error and exits 0: unharmed. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void) {
  void *buffer = NULL;
  cudaError_t status = cudaMalloc(&buffer, 4096);
  printf("cudaMalloc: %s (%d)\n", cudaGetErrorName(status), (int)status);
  if (status == cudaSuccess) cudaFree(buffer);
  int driver_version = -1;
  cudaDriverGetVersion(&driver_version);
  printf("driver version seen by the runtime: %d\n", driver_version);
  return 0;
}
