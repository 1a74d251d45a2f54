/* Built with the toolkit's real libcudart_static.a by the C compiler (no nvcc). On the
 * simulated driver, the runtime's driver lookups (dlopen + cuGetProcAddress) go through
 * leaseguard, which wraps the allocation family, and the runtime's private tables come from
 * the simulator (sim/sim_export_tables.cpp): cudaMalloc succeeds, and the buffer is freed. */
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
