// A launch of a library's device code on the PTX interpreter (sim/ptx/): the launch checked
// as the driver checks it, its arguments laid out, its module variables found in the current
// context, and its outcome turned into the driver's status.
//
// A kernel the interpreter cannot run is refused with one line on stderr naming the kernel
// and what stops it (the instruction, or that the code has machine code only, naming its
// architectures): CUDA_ERROR_NOT_SUPPORTED, or CUDA_ERROR_NO_BINARY_FOR_GPU for code without
// PTX. A kernel that faults ends as a device ends it (CUDA_ERROR_ILLEGAL_ADDRESS,
// CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_LAUNCH_FAILED for a trap, CUDA_ERROR_ASSERT),
// said once on stderr with the address and the instruction, and the context keeps the error
// (sim_device.h's sticky_error).
#pragma once

#include "lg_cuda.h"
#include "sim_libraries.h"

namespace leaseguard::sim {

CUresult launch_device_code(LibraryKernel &kernel, const unsigned grid[3], const unsigned block[3],
                            unsigned dynamic_shared, void **kernel_params, void **extra);

}  // namespace leaseguard::sim
