// libFuzzer target: the suppressions parser, and every parsed pattern matched against
// strings from the same input (the matcher must stay fast on hostile patterns).
#include <cstddef>
#include <cstdint>
#include <string>

#include "suppressions.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  leaseguard::report::Suppressions suppressions;
  std::string error;
  suppressions.parse(text, "fuzz", error);
  for (const auto &suppression : suppressions.entries()) {
    leaseguard::report::suppression_pattern_matches(suppression.pattern, text);
    leaseguard::report::suppression_pattern_matches(suppression.pattern, suppression.api_pattern);
  }
  return 0;
}
