// Python ints as pointers. A program that keeps device pointers as ctypes and cuda-python
// code does, as Python `int`s (in a dict, a list, an attribute), holds no pointer-sized word
// with the address: CPython stores an int's magnitude in 30-bit digits. The classifier reads
// each int object's value as one more word of it (reachability.h, Snapshot::python_int_type).
//
// The layouts, 64-bit CPython with the GIL:
//   3.8 to 3.11  ob_refcnt, ob_type, ob_size (digit count, its sign the int's), digits
//   3.12, 3.13   ob_refcnt, ob_type, lv_tag (digit count << 3 | sign: 0 positive, 1 zero,
//                2 negative), digits
// A free-threaded build's object header is another (and its objects live in mimalloc, which
// the scan does not read: they are unchecked, python_interpreter.h).
#pragma once

#include <cstdint>

namespace leaseguard::reachability {

enum class PythonIntLayout : uint8_t {
  None,          // no interpreter, or one whose ints are not read
  SizeInHeader,  // 3.8 to 3.11
  TaggedValue,   // 3.12 and later
};

// The value of the int object at `object` (`bytes` of it readable), if its type is `int_type`
// and it is positive and under 2^60 (two digits: every user-space address); else 0.
uint64_t python_int_value(const uint64_t *object, uint64_t bytes, uint64_t int_type, PythonIntLayout layout) noexcept;

}  // namespace leaseguard::reachability
