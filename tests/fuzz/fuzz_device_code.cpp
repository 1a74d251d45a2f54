// libFuzzer target: reading kernels and variables out of device code (a fat binary with
// stored, LZ4- or zstd-compressed entries, a cubin, PTX), as the simulated driver does for
// every image a program loads. Nothing outside the input may be read.
#include <cstddef>
#include <cstdint>

#include "sim_device_code.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  leaseguard::sim::DeviceCode code;
  (void)leaseguard::sim::read_device_code(data, size, code);
  return 0;
}
