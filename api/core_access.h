// The process's one leaseguard core, as the C++ API reaches it (core/session/core_link.h): the
// preload's when it is loaded, else one of the API library's own. Never null; with
// recording off (LEASEGUARD_DISABLE, a setuid program) it records nothing and lease calls
// return 0.
#pragma once

#include "core_link.h"
#include "stack_capture.h"

namespace leaseguard::api {

const leaseguard_core_link &core() noexcept;

// Records an allocation the API made for its caller, whose stack begins at `caller` (read
// in the API's entry point: walk_start_above(__builtin_frame_address(0))).
void record_alloc(const leaseguard_alloc_event &event, const WalkStart &caller) noexcept;

// True if the API runs its own core (no preload in the process).
bool core_is_local() noexcept;

}  // namespace leaseguard::api
