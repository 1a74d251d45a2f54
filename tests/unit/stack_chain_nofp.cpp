// Call chains for the stack capture tests, compiled without frame pointers (see
// tests/CMakeLists.txt): here %rbp is an ordinary register, so only the call frame
// information can say where each frame is.
#include "stack_chain.h"

#include <alloca.h>

#include <cstring>

namespace leaseguard::testing {

namespace {
volatile int g_sink;

// Uses %rbp for data: many live values across a call leave the compiler no other choice.
__attribute__((noinline)) size_t busy_registers(const ChainCall &call, int depth) {
  // Eight reads of the volatile: eight values live across the call. Unsigned, and the sum
  // kept small: the chain runs again and again (--gtest_repeat), and g_sink sizes an alloca.
  auto sink = [] { return static_cast<unsigned>(g_sink); };
  unsigned a = sink() + 1, b = sink() + 2, c = sink() + 3, d = sink() + 4, e = sink() + 5, f = sink() + 6,
           g = sink() + 7, h = sink() + 8;
  size_t result = nofp_chain(call, depth - 1);
  g_sink = static_cast<int>((a * b + c * d + e * f + g * h) & 0xFFu);
  return result;
}

// A frame whose size is known only at run time: its CFA is kept in %rbp even here.
__attribute__((noinline)) size_t dynamic_frame(const ChainCall &call, int depth) {
  auto *scratch = static_cast<char *>(alloca(static_cast<size_t>(g_sink + 64 + depth)));
  std::memset(scratch, 0, 64);
  size_t result = nofp_chain(call, depth - 1);
  g_sink = scratch[3];
  return result;
}

// A large frame.
__attribute__((noinline)) size_t big_frame(const ChainCall &call, int depth) {
  volatile char page[5000];
  page[0] = static_cast<char>(depth);
  size_t result = nofp_chain(call, depth - 1);
  g_sink = page[0];
  return result;
}
}  // namespace

size_t nofp_chain(const ChainCall &call, int depth) {
  size_t result;
  if (depth <= 0) result = call.function(call.argument);
  else if (depth % 3 == 0) result = busy_registers(call, depth);
  else if (depth % 3 == 1) result = dynamic_frame(call, depth);
  else result = big_frame(call, depth);
  __asm__ volatile("" ::: "memory");  // not a tail call
  return result;
}

}  // namespace leaseguard::testing
