// Runs a decoded PTX kernel (ptx_program.h) for a launch: the grid's blocks spread over the
// host's cores, each block's warps run one after another on one host thread.
//
// A warp runs its lanes in lockstep: the lanes at the lowest instruction index run together
// and the others wait, so lanes that branched apart run again as one warp where their paths
// meet (the smallest index first; this is how reconvergence falls out of structured code
// without the compiler's reconvergence points). Warp-wide instructions (shfl, vote, match,
// redux) see every lane that is at the instruction with them.
//
// A block's warps run in turn, each until it ends or waits at a barrier; when every warp of
// the block that has not ended waits at the barrier, all go on. That is `__syncthreads` as
// the hardware defines it, without host threads per warp.
//
// Memory: every access is checked. A global access must lie in one live allocation of the
// simulated device (or a module's variable, or host memory registered with it), a shared one
// in the block's shared memory, a local one in the thread's frame, and every access must be
// aligned to its size: anything else ends the launch as a device ends it, with
// CUDA_ERROR_ILLEGAL_ADDRESS or CUDA_ERROR_MISALIGNED_ADDRESS, and the host program goes on.
// Accesses to global memory are relaxed atomic ones, so blocks on two host threads writing
// what a device lets them write are no data race to the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx_program.h"

namespace leaseguard::sim::ptx {

struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned dynamic_shared = 0;
};

// Where module variables live for this launch: name -> device address (ptx_program.h's
// Program::globals, resolved by the caller in the current context).
struct LaunchSymbols {
  std::vector<uint64_t> globals;  // in Program::globals's order
};

// Host callbacks the machine needs of the simulator.
struct DeviceMemory {
  // The allocation holding `address`: its base and size; false if none.
  bool (*range_of)(uint64_t address, uint64_t *base, uint64_t *size) = nullptr;
};

enum class LaunchStatus { Done, IllegalAddress, MisalignedAddress, Trap, Assert };

struct LaunchOutcome {
  LaunchStatus status = LaunchStatus::Done;
  std::string message;               // what went wrong and where, for a fault
  std::string printed;               // what the kernel's printf calls wrote, in block and thread order
  uint64_t thread_instructions = 0;  // each instruction once for each lane that ran it
  unsigned workers = 0;              // host threads the blocks ran on
};

// Runs `kernel` of `program`. `arguments` is the kernel's argument buffer (Kernel::
// arguments_size bytes, laid out at each Parameter's offset).
LaunchOutcome run_kernel(const Program &program, const Kernel &kernel, const LaunchShape &shape,
                         const std::vector<unsigned char> &arguments, const LaunchSymbols &symbols,
                         const DeviceMemory &memory);

}  // namespace leaseguard::sim::ptx
