// Libraries (cuLibraryLoadData): what the CUDA runtime loads its fat binaries with, lazily,
// at a first launch or a first use of a `__device__` variable.
//
// A library is loaded from device code nvcc makes (a fat binary, a cubin or PTX, read by
// sim_device_code.h) or from a simulator module image (sim_kernels.h). Its kernels are the
// ones the code declares. Its PTX, where it has any, is decoded once, at the load, for the
// interpreter (sim/ptx/, launched by sim_ptx_launch.h); a kernel with a host stand-in of the
// same name (a C++ kernel's name matched unmangled) runs the stand-in instead. Its variables
// get device memory of their size holding their initial bytes, once per context, the first
// time they are asked for; the memory is the context's (freed with it) and goes at the
// library's unload, as on a driver.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lg_cuda.h"
#include "ptx/ptx_program.h"
#include "sim_device_code.h"
#include "sim_kernels.h"

namespace leaseguard::sim {

struct SimLibrary;
struct LibraryKernel {
  std::string name;
  const SimKernel *stand_in = nullptr;
  const ptx::Kernel *device_code = nullptr;  // its PTX, decoded (the library's program)
  SimLibrary *library = nullptr;             // the library it came from (possibly unloaded since)
  std::atomic<bool> refused{false};          // its failed launch was reported on stderr
};

struct SimLibrary {
  std::vector<LibraryKernel *> kernels;
  SimModule *stand_ins = nullptr;         // a simulator module image loaded as a library
  DeviceCode code;                        // what its device code declares (device code only)
  std::unique_ptr<ptx::Program> program;  // its PTX decoded, if it has PTX that decodes
  std::string ptx_error;                  // why its PTX did not decode
  // Device memory of its variables: (context, name) -> address.
  std::map<std::pair<CUcontext, std::string>, uint64_t> variable_memory;
  // `__managed__` variables: one copy for the process, whatever context is current.
  std::map<std::string, uint64_t> managed_memory;
};

// A live library loaded from `image`, or the status a driver gives: INVALID_IMAGE (neither
// device code nor a simulator module, or device code that does not decode),
// NO_BINARY_FOR_GPU (no code for the simulated device's architecture).
CUresult load_library(const void *image, SimLibrary **out);
bool unload_library(SimLibrary *library);  // false: not a live library
bool library_valid(const SimLibrary *library);
// INVALID_HANDLE: not a live library; NOT_FOUND: no kernel of that name.
CUresult library_kernel(SimLibrary *library, const char *name, LibraryKernel **out);
// The device memory of variable `name` in the current context. INVALID_HANDLE: not a live
// library; NOT_FOUND: no such variable; INVALID_CONTEXT: no current context.
// `managed_only`: cuLibraryGetManaged, which finds only `__managed__` variables (their
// memory is host memory here, as all the simulator's is, so the host reads them directly).
CUresult library_variable(SimLibrary *library, const char *name, uint64_t *address, size_t *size,
                          bool managed_only = false);
// The library kernel `handle` is (a CUkernel, or a CUfunction made from one), else null.
const LibraryKernel *as_library_kernel(const void *handle);

}  // namespace leaseguard::sim
