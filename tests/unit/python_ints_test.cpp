// Python ints read as pointers (core/reachability/python_ints.h), in each layout CPython has.
#include <gtest/gtest.h>

#include <cstring>

#include "python_ints.h"

namespace leaseguard::reachability {
namespace {

constexpr uint64_t kIntType = 0x7f0000123450;

// An int object as CPython lays it out: header, then its digits (30 bits each, least first).
struct IntObject {
  uint64_t words[5] = {};
  IntObject(uint64_t type, uint64_t size_or_tag, uint32_t low, uint32_t high = 0) {
    words[0] = 1;  // ob_refcnt
    words[1] = type;
    words[2] = size_or_tag;
    std::memcpy(&words[3], &low, 4);
    std::memcpy(reinterpret_cast<char *>(&words[3]) + 4, &high, 4);
  }
};

constexpr uint64_t kAddress = 0x7ffff7d6b800;  // two digits
constexpr uint32_t kLow = kAddress & ((1u << 30) - 1), kHigh = kAddress >> 30;

TEST(PythonInts, BothLayoutsGiveTheValue) {
  IntObject old_layout(kIntType, 2, kLow, kHigh);  // 3.8 to 3.11: ob_size 2
  EXPECT_EQ(python_int_value(old_layout.words, 32, kIntType, PythonIntLayout::SizeInHeader), kAddress);
  IntObject new_layout(kIntType, 2 << 3, kLow, kHigh);  // 3.12+: two digits, positive
  EXPECT_EQ(python_int_value(new_layout.words, 32, kIntType, PythonIntLayout::TaggedValue), kAddress);
  IntObject one_digit(kIntType, 1, 0xba1f00);  // a 28-byte block, as malloc keeps it
  EXPECT_EQ(python_int_value(one_digit.words, 28, kIntType, PythonIntLayout::SizeInHeader), 0xba1f00u);
}

TEST(PythonInts, WhatIsNotAPositivePointerSizedIntReadsAsNothing) {
  IntObject other_type(kIntType + 8, 1, 1234);
  EXPECT_EQ(python_int_value(other_type.words, 32, kIntType, PythonIntLayout::SizeInHeader), 0u);
  IntObject negative(kIntType, static_cast<uint64_t>(-1), 1234);
  EXPECT_EQ(python_int_value(negative.words, 32, kIntType, PythonIntLayout::SizeInHeader), 0u);
  IntObject negative_tagged(kIntType, (1 << 3) | 2, 1234);
  EXPECT_EQ(python_int_value(negative_tagged.words, 32, kIntType, PythonIntLayout::TaggedValue), 0u);
  IntObject zero_tagged(kIntType, 1, 0);
  EXPECT_EQ(python_int_value(zero_tagged.words, 32, kIntType, PythonIntLayout::TaggedValue), 0u);
  IntObject three_digits(kIntType, 3, kLow, kHigh);  // 2^60 and over: no address
  EXPECT_EQ(python_int_value(three_digits.words, 40, kIntType, PythonIntLayout::SizeInHeader), 0u);
  IntObject cut_short(kIntType, 2, kLow, kHigh);  // its digits past the block's end
  EXPECT_EQ(python_int_value(cut_short.words, 28, kIntType, PythonIntLayout::SizeInHeader), 0u);
  EXPECT_EQ(python_int_value(cut_short.words, 16, kIntType, PythonIntLayout::SizeInHeader), 0u);
  EXPECT_EQ(python_int_value(cut_short.words, 32, kIntType, PythonIntLayout::None), 0u);
}

}  // namespace
}  // namespace leaseguard::reachability
