// libFuzzer target: PTX text decoded for the simulator's interpreter (sim/ptx/), as the
// simulated driver does for the PTX of every library a program loads. Whatever the text, the
// decoder gives a program (whose kernels may refuse) or an error; it never reads outside the
// input or loops.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptx/ptx_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  const leaseguard::sim::ptx::DecodeResult decoded = leaseguard::sim::ptx::decode(text);
  if (decoded.program == nullptr && decoded.error.empty()) __builtin_trap();  // neither: a defect
  return 0;
}
