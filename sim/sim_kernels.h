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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
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

// Resolves the parameters of a launch. `extra` is {BUFFER_POINTER, data, BUFFER_SIZE, &size,
// END}, with the markers given (CUDA and HIP number END differently). Returns 0 or
// CUDA_ERROR_INVALID_VALUE when neither or both are given, or the buffer size is not the
// kernel's.
// A kernel of a library loaded from device code (cuLibraryLoadData with what nvcc makes: a
// fat binary, a cubin or PTX). The simulator cannot run device code: a launch runs the host
// stand-in of the same name if there is one (a C++ kernel's name is matched unmangled), and
// otherwise fails with CUDA_ERROR_NO_BINARY_FOR_GPU, saying once on stderr which kernel it was.
struct LibraryKernel {
  std::string name;
  const SimKernel *stand_in = nullptr;
  std::atomic<bool> refused{false};  // its failed launch was reported on stderr
};
struct SimLibrary {
  std::vector<LibraryKernel *> kernels;
  SimModule *stand_ins = nullptr;  // a simulator module image loaded as a library
};
// Whether `image` is device code nvcc makes (a fat binary or its wrapper, an ELF cubin, PTX).
bool is_device_code(const void *image);
SimLibrary *load_library(const void *image);  // null: neither device code nor a simulator module
bool unload_library(SimLibrary *library);     // false: not a live library
LibraryKernel *library_kernel(SimLibrary *library, const char *name);  // null: not a live library
// The library kernel `handle` is (a CUkernel, or a CUfunction made from one), else null.
const LibraryKernel *as_library_kernel(const void *handle);
// The stand-in for a kernel named `name` (exactly, or unmangled), else null.
const SimKernel *stand_in_for(const char *name);

int resolve_arguments(const SimKernel &kernel, void **params, void **extra, void *buffer_pointer_marker,
                      void *buffer_size_marker, void *end_marker, KernelLaunch &launch);

}  // namespace leaseguard::sim
