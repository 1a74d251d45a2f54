// Call chains of known shape for the stack capture tests.
#pragma once

#include <cstddef>

namespace leaseguard::testing {

struct ChainCall {
  size_t (*function)(void *argument);
  void *argument;
};

// Calls `call` at the bottom of `depth` frames built without frame pointers, of three
// kinds in turn: one that keeps data in %rbp, one with alloca, one with a large frame.
size_t nofp_chain(const ChainCall &call, int depth);

}  // namespace leaseguard::testing
