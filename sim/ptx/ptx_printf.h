// Device printf (vprintf): a format string in device memory and the arguments a thread packed
// in its frame, each at its own alignment (int-sized conversions 4 bytes, `l`/`ll` ones,
// doubles and pointers 8), formatted by the host's snprintf one conversion at a time.
#pragma once

#include <cstdint>
#include <string>

#include "ptx_machine.h"
#include "ptx_warp.h"

namespace leaseguard::sim::ptx {

// What each of `lanes` prints, appended to the warp's output in lane order.
void print(Warp &warp, const Instruction &in, uint32_t lanes);

// A NUL-terminated string at a generic address the warp may read ("(null)" or "(unreadable)"
// where it may not).
std::string device_string(Warp &warp, uint64_t address);

}  // namespace leaseguard::sim::ptx
