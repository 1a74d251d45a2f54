// Where the program's modules keep their global variables in device memory: `__device__`,
// `__constant__` and `__managed__` variables, as the driver handed out their addresses (the
// table's LocatesGlobal entry points; the CUDA runtime asks for each variable the program
// uses from the host). They live as long as their module and hold
// what the program put there, device pointers included (a table a kernel follows), so the
// reachability scan reads them as the program's roots, as it reads its host globals.
//
// A variable the host never asked for (a kernel's own) is not known; nor are HIP's, which
// its runtime resolves inside itself.
#pragma once

#include <cstdint>
#include <vector>

#include "entry_points.h"

namespace leaseguard::interpose {

struct DeviceGlobal {
  Api located_by = Api::Unknown;  // the lookup that handed it out (its driver reads it back)
  uint64_t owner = 0;             // the CUmodule or CUlibrary
  uint64_t address = 0;
  uint64_t bytes = 0;
};

// A variable of `owner` at [address, address + bytes), as the driver handed it out.
void note_device_global(Api located_by, uint64_t owner, uint64_t address, uint64_t bytes) noexcept;

// `owner` is being unloaded: its variables go with it.
void forget_device_globals_of(uint64_t owner) noexcept;

// The variables known now, in address order.
std::vector<DeviceGlobal> device_globals();

}  // namespace leaseguard::interpose
