// Python ints as pointers (see python_ints.h).
#include "python_ints.h"

#include <cstring>

namespace leaseguard::reachability {

uint64_t python_int_value(const uint64_t *object, uint64_t bytes, uint64_t int_type, PythonIntLayout layout) noexcept {
  constexpr uint64_t kHeaderBytes = 24;  // the object's header, then its value's digit count
  if (layout == PythonIntLayout::None || int_type == 0 || bytes < kHeaderBytes || object[1] != int_type) return 0;
  uint64_t digit_count = 0;
  if (layout == PythonIntLayout::SizeInHeader) {
    const auto size = static_cast<int64_t>(object[2]);  // negative for a negative int
    if (size <= 0) return 0;
    digit_count = static_cast<uint64_t>(size);
  } else {
    const uint64_t tag = object[2];
    if ((tag & 3) != 0) return 0;  // zero or negative
    digit_count = tag >> 3;
  }
  // A block holds what was asked for: a one-digit int is 28 bytes.
  if (digit_count == 0 || digit_count > 2 || bytes < kHeaderBytes + digit_count * sizeof(uint32_t)) return 0;
  uint32_t digits[2] = {0, 0};
  std::memcpy(digits, object + 3, digit_count * sizeof(uint32_t));
  constexpr uint32_t kDigitMask = (uint32_t{1} << 30) - 1;
  return uint64_t{digits[0] & kDigitMask} | (uint64_t{digits[1] & kDigitMask} << 30);
}

}  // namespace leaseguard::reachability
