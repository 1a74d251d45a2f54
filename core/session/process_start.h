// The start of recording in a process, the same for both front ends (the preload's
// constructor, the C++ API library's first session without the preload).
#pragma once

#include <cstdint>

#include "reclaim_backend.h"
#include "tracker.h"

namespace leaseguard {

struct FrontEnd {
  uintptr_t own_code = 0;             // an address in the front end: its module is left out of stacks
  ReclaimBackend *reclaim = nullptr;  // frees reclaimed allocations; never destroyed
};

// Reads the LEASEGUARD_* variables once, says what is wrong with them (unless `leaseguard
// run` has: options.h), and, unless recording is off (LEASEGUARD_DISABLE=1; a setuid or
// setgid program, whose environment is its caller's), installs the process's core, with
// its fork handler. Returns the core, or nullptr: pass-through.
Tracker *start_process_core(const FrontEnd &front_end) noexcept;

}  // namespace leaseguard
