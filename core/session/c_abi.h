// The C ABI of include/leaseguard/leaseguard.h, written once for both front ends.
//
// c_abi.cpp is compiled into the preload and into the C++ API library (not into the core
// library, whose users need not export it), and goes through the same door as everything
// else the front ends record: the core link (core_link.h). Each front end says which link
// that is by defining front_end_link(). So the answers are the same whichever front end a
// program reaches: with no core recording (LEASEGUARD_DISABLE, a setuid program) every call
// is a no-op returning 0, as <leaseguard/annotate.h>'s are where leaseguard is absent.
#pragma once

#include "core_link.h"

namespace leaseguard {

// The link to the process's one core that this front end records through. Never fails.
const leaseguard_core_link &front_end_link() noexcept;

}  // namespace leaseguard
