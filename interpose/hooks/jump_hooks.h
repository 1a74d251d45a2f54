// The preload's longjmp family (jump_hooks.cpp): what the rest of the preload calls.
#pragma once

#include "stack_jump.h"

namespace leaseguard::interpose {

// Called by the longjmp family with a jump's target: the thread's hooks and tracked heap calls
// that the jump leaves are taken as ended.
void jumping_to(const StackJump &jump) noexcept;

// Resolves the C library's longjmp family, from the preload's constructor (a jump from a
// signal handler must never be the first to look them up: dlsym takes the loader's lock).
void resolve_jump_functions() noexcept;

}  // namespace leaseguard::interpose
