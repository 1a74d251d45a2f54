// Modules of host-implemented kernels, so launches are tested for real on the simulator.
//
// A module image is the text "leaseguard-sim-module:" followed by kernel names separated by
// commas, NUL-terminated. Every kernel declares its parameters (size and alignment, as the
// compiler lays them out); a launch reads them either from kernelParams (one pointer per
// parameter) or from the packed `extra` buffer at the offsets the driver's rule gives: each
// parameter at its natural alignment, in order. A kernel runs once per thread of the grid,
// on the calling thread, before the launch returns.
//
//   vector_add(const float *a, const float *b, float *c, unsigned n)   c[i] = a[i] + b[i]
//   fill_u32(unsigned *out, unsigned value, unsigned n)                out[i] = value
//   mixed_args(char c, double d, float4 f, char c2, uint64_t *out)    out[0..6] = the values
//                                                                      as it decoded them
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leaseguard::sim {

struct KernelParameter {
  size_t size;
  size_t alignment;
};

struct KernelLaunch {
  unsigned threads = 0;                 // grid x block, all dimensions
  std::vector<const void *> arguments;  // one pointer per parameter, to its bytes
};

struct SimKernel {
  const char *name;
  std::vector<KernelParameter> parameters;
  // Returns 0 or a driver status (an illegal address for a pointer outside device memory).
  int (*run)(const KernelLaunch &launch);
};

struct SimModule {
  std::vector<const SimKernel *> kernels;
};

// The module an image describes, or null if it is not a simulator module.
SimModule *load_module(const void *image);
void unload_module(SimModule *module);
bool module_valid(const SimModule *module);
const SimKernel *find_kernel(const SimModule *module, const char *name);
bool kernel_valid(const SimKernel *kernel);

// The stand-in for a kernel named `name` (exactly, or unmangled), else null.
const SimKernel *stand_in_for(const char *name);

// Resolves the parameters of a launch. `extra` is {BUFFER_POINTER, data, BUFFER_SIZE, &size,
// END}, with the markers given (CUDA and HIP number END differently). Returns 0 or
// CUDA_ERROR_INVALID_VALUE when neither or both are given, or the buffer size is not the
// kernel's.
int resolve_arguments(const SimKernel &kernel, void **params, void **extra, void *buffer_pointer_marker,
                      void *buffer_size_marker, void *end_marker, KernelLaunch &launch);

}  // namespace leaseguard::sim
