// The interpreter's handlers: one function a PTX operation and type, each running its
// operation for the active lanes of a warp (ptx_warp.h). The decoder picks them.
//
// Integer arithmetic wraps as the hardware's does (computed unsigned); division by zero and
// the one overflowing signed division give what the hardware gives, never a host trap.
// Floating point runs in the host's SSE unit, whose control word the decoder sets for the
// rounding modes and .ftz PTX names (ptx_decode.cpp wraps such instructions).
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ptx_warp.h"

namespace leaseguard::sim::ptx::ops {

// PTX's .s8 values are numbers: int8_t is one here, never a character.
// NOLINTBEGIN(bugprone-signed-char-misuse)

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// ---- Two, one and three operands ----

template <typename T, typename Op>
void binary(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) { w.put<T>(in.d[0], l, Op::apply(w.get<T>(in.a, l), w.get<T>(in.b, l))); });
}

template <typename T, typename Op>
void unary(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) { w.put<T>(in.d[0], l, Op::apply(w.get<T>(in.a, l))); });
}

template <typename T, typename Op>
void ternary(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    w.put<T>(in.d[0], l, Op::apply(w.get<T>(in.a, l), w.get<T>(in.b, l), w.get<T>(in.c, l)));
  });
}

// Integer operations, computed unsigned so that overflow wraps.
template <typename T>
T wrap(Unsigned<T> value) {
  return static_cast<T>(value);
}

struct Add {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return wrap<T>(static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)));
    else return a + b;
  }
};
struct Sub {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return wrap<T>(static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b)));
    else return a - b;
  }
};
struct MulLo {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::conditional_t<(sizeof(T) < 4), uint32_t, Unsigned<T>>;
      return static_cast<T>(
          static_cast<U>(static_cast<U>(static_cast<Unsigned<T>>(a)) * static_cast<U>(static_cast<Unsigned<T>>(b))));
    } else {
      return a * b;
    }
  }
};
struct MulHi {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      return static_cast<T>((static_cast<Wide>(a) * static_cast<Wide>(b)) >> 64);
    } else {
      using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return static_cast<T>((static_cast<Wide>(a) * static_cast<Wide>(b)) >> (8 * sizeof(T)));
    }
  }
};
struct Div {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return static_cast<T>(std::is_signed_v<T> ? (a < 0 ? 1 : -1) : -1);
      if (std::is_signed_v<T> && b == T(-1)) return wrap<T>(static_cast<Unsigned<T>>(0 - static_cast<Unsigned<T>>(a)));
      return a / b;
    } else {
      return a / b;
    }
  }
};
struct Rem {
  template <typename T>
  static T apply(T a, T b) {
    if (b == 0) return a;
    if (std::is_signed_v<T> && b == T(-1)) return 0;
    return a % b;
  }
};
// PTX's min and max of floats: a NaN operand gives the other one.
struct Min {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
    else return a < b ? a : b;
  }
};
struct Max {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
    else return a > b ? a : b;
  }
};
struct And {
  template <typename T>
  static T apply(T a, T b) {
    return a & b;
  }
};
struct Or {
  template <typename T>
  static T apply(T a, T b) {
    return a | b;
  }
};
struct Xor {
  template <typename T>
  static T apply(T a, T b) {
    return a ^ b;
  }
};
// Shifts by the register's width or more give 0 (or the sign, shifting a signed value right).
struct Shl {
  template <typename T>
  static T apply(T a, uint32_t by) {
    return by >= 8 * sizeof(T) ? T(0) : static_cast<T>(static_cast<Unsigned<T>>(a) << by);
  }
};
struct Shr {
  template <typename T>
  static T apply(T a, uint32_t by) {
    if (by >= 8 * sizeof(T)) return std::is_signed_v<T> && a < 0 ? T(-1) : T(0);
    return static_cast<T>(a >> by);
  }
};
// shl / shr d, a, b: b is a u32 whatever a's type.
template <typename T, typename Op>
void shift(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) { w.put<T>(in.d[0], l, Op::apply(w.get<T>(in.a, l), w.get<uint32_t>(in.b, l))); });
}
struct CopySign {
  template <typename T>
  static T apply(T a, T b) {
    return std::copysign(b, a);
  }
};

struct Neg {
  template <typename T>
  static T apply(T a) {
    if constexpr (std::is_integral_v<T>) return wrap<T>(static_cast<Unsigned<T>>(0 - static_cast<Unsigned<T>>(a)));
    else return -a;
  }
};
struct Abs {
  template <typename T>
  static T apply(T a) {
    if constexpr (std::is_integral_v<T>) return a < 0 ? Neg::apply(a) : a;
    else return std::fabs(a);
  }
};
struct Not {
  template <typename T>
  static T apply(T a) {
    return static_cast<T>(~a);
  }
};
struct NotPredicate {
  template <typename T>
  static T apply(T a) {
    return a == 0 ? 1 : 0;
  }
};
struct CNot {
  template <typename T>
  static T apply(T a) {
    return a == 0 ? 1 : 0;
  }
};
struct Popc {
  template <typename T>
  static T apply(T a) {
    return static_cast<T>(__builtin_popcountll(static_cast<uint64_t>(static_cast<Unsigned<T>>(a))));
  }
};
struct Clz {
  template <typename T>
  static T apply(T a) {
    const uint64_t v = static_cast<Unsigned<T>>(a);
    return static_cast<T>(v == 0 ? 8 * sizeof(T) : static_cast<unsigned>(__builtin_clzll(v)) - (64 - 8 * sizeof(T)));
  }
};
struct Brev {
  template <typename T>
  static T apply(T a) {
    Unsigned<T> v = static_cast<Unsigned<T>>(a), r = 0;
    for (unsigned i = 0; i < 8 * sizeof(T); ++i) r = static_cast<Unsigned<T>>((r << 1) | ((v >> i) & 1));
    return static_cast<T>(r);
  }
};
struct Rcp {
  template <typename T>
  static T apply(T a) {
    return T(1) / a;
  }
};
struct Sqrt {
  template <typename T>
  static T apply(T a) {
    return std::sqrt(a);
  }
};
struct Rsqrt {
  template <typename T>
  static T apply(T a) {
    return T(1) / std::sqrt(a);
  }
};
struct Sin {
  template <typename T>
  static T apply(T a) {
    return std::sin(a);
  }
};
struct Cos {
  template <typename T>
  static T apply(T a) {
    return std::cos(a);
  }
};
struct Ex2 {
  template <typename T>
  static T apply(T a) {
    return std::exp2(a);
  }
};
struct Lg2 {
  template <typename T>
  static T apply(T a) {
    return std::log2(a);
  }
};
struct Tanh {
  template <typename T>
  static T apply(T a) {
    return std::tanh(a);
  }
};
struct Mov {
  template <typename T>
  static T apply(T a) {
    return a;
  }
};

struct MadLo {
  template <typename T>
  static T apply(T a, T b, T c) {
    return Add::apply(MulLo::apply(a, b), c);
  }
};
struct MadHi {
  template <typename T>
  static T apply(T a, T b, T c) {
    return Add::apply(MulHi::apply(a, b), c);
  }
};
struct Fma {
  template <typename T>
  static T apply(T a, T b, T c) {
    return std::fma(a, b, c);
  }
};
// d = c ? a : b, with c a predicate.
template <typename T>
void selp(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    w.put<T>(in.d[0], l, w.get<uint8_t>(in.c, l) != 0 ? w.get<T>(in.a, l) : w.get<T>(in.b, l));
  });
}
// d = c >= 0 ? a : b (slct, c signed or a float).
template <typename T, typename C>
void slct(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes,
            [&](unsigned l) { w.put<T>(in.d[0], l, w.get<C>(in.c, l) >= 0 ? w.get<T>(in.a, l) : w.get<T>(in.b, l)); });
}

// mul.wide / mad.wide: the product in twice the width.
template <typename T, typename Wide>
void mul_wide(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    w.put<Wide>(in.d[0], l,
                static_cast<Wide>(static_cast<Wide>(w.get<T>(in.a, l)) * static_cast<Wide>(w.get<T>(in.b, l))));
  });
}
template <typename T, typename Wide>
void mad_wide(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    using U = std::make_unsigned_t<Wide>;
    const U product = static_cast<U>(static_cast<Wide>(w.get<T>(in.a, l)) * static_cast<Wide>(w.get<T>(in.b, l)));
    w.put<Wide>(in.d[0], l, static_cast<Wide>(product + static_cast<U>(w.get<Wide>(in.c, l))));
  });
}

// add.sat.s32 / sub.sat.s32.
template <bool Subtract>
void saturating_s32(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const int64_t a = w.get<int32_t>(in.a, l), b = w.get<int32_t>(in.b, l);
    const int64_t r = Subtract ? a - b : a + b;
    w.put<int32_t>(in.d[0], l, static_cast<int32_t>(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r));
  });
}

// add.cc, addc(.cc), sub.cc, subc(.cc): 32- or 64-bit with the warp's carry bits.
template <typename T, bool Subtract, bool UseCarry, bool SetCarry>
void carry_op(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    using Wide = unsigned __int128;
    const Wide a = w.get<T>(in.a, l), b = w.get<T>(in.b, l);
    const Wide carry_in = UseCarry ? ((w.carry >> l) & 1u) : 0;
    Wide r;
    bool carry_out;
    if (Subtract) {
      r = a - b - carry_in;
      carry_out = a < b + carry_in;  // a borrow
    } else {
      r = a + b + carry_in;
      carry_out = (r >> (8 * sizeof(T))) != 0;
    }
    w.put<T>(in.d[0], l, static_cast<T>(r));
    if (SetCarry) w.carry = carry_out ? (w.carry | (1u << l)) : (w.carry & ~(1u << l));
  });
}

// ---- Comparisons ----

enum Compare : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };

template <typename T>
bool compare(uint8_t op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool unordered = std::isnan(a) || std::isnan(b);
    switch (op) {
      case Eq: return !unordered && a == b;
      case Ne: return !unordered && a != b;
      case Lt: return !unordered && a < b;
      case Le: return !unordered && a <= b;
      case Gt: return !unordered && a > b;
      case Ge: return !unordered && a >= b;
      case Equ: return unordered || a == b;
      case Neu: return unordered || a != b;
      case Ltu: return unordered || a < b;
      case Leu: return unordered || a <= b;
      case Gtu: return unordered || a > b;
      case Geu: return unordered || a >= b;
      case Num: return !unordered;
      default: return unordered;
    }
  } else {
    switch (op) {
      case Eq: return a == b;
      case Ne: return a != b;
      case Lt: return a < b;
      case Le: return a <= b;
      case Gt: return a > b;
      default: return a >= b;
    }
  }
}

// setp.CMP[.BOOL].T p[|q], a, b[, {!}c]: mode's low nibble the comparison, bits 4-5 the
// combination with c (0 none, 1 and, 2 or, 3 xor), bit 6 c negated.
template <typename T>
void setp(Warp &w, const Instruction &in, uint32_t lanes) {
  const uint8_t op = in.mode & 15, combine = (in.mode >> 4) & 3;
  const bool negate_c = (in.mode & 64) != 0;
  each_lane(lanes, [&](unsigned l) {
    bool t = compare<T>(op, w.get<T>(in.a, l), w.get<T>(in.b, l));
    bool f = !t;
    if (combine != 0) {
      const bool c = (w.get<uint8_t>(in.c, l) != 0) != negate_c;
      if (combine == 1) t = t && c, f = f && c;
      else if (combine == 2) t = t || c, f = f || c;
      else t = t != c, f = f != c;
    }
    w.put<uint8_t>(in.d[0], l, t ? 1 : 0);
    if (in.d[1] != kNoRegister) w.put<uint8_t>(in.d[1], l, f ? 1 : 0);
  });
}

// set.CMP.D.T d, a, b: all ones (or 1.0f) where true.
template <typename T, typename D>
void set(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const bool t = compare<T>(in.mode & 15, w.get<T>(in.a, l), w.get<T>(in.b, l));
    if constexpr (std::is_floating_point_v<D>) w.put<D>(in.d[0], l, t ? D(1) : D(0));
    else w.put<D>(in.d[0], l, t ? D(-1) : D(0));
  });
}

// testp.OP.T p, a: mode 0 finite, 1 infinite, 2 number, 3 notanumber, 4 normal, 5 subnormal.
template <typename T>
void testp(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const T a = w.get<T>(in.a, l);
    bool r = false;
    switch (in.mode) {
      case 0: r = std::isfinite(a); break;
      case 1: r = std::isinf(a); break;
      case 2: r = !std::isnan(a); break;
      case 3: r = std::isnan(a); break;
      case 4: r = std::isnormal(a); break;
      default: r = std::fpclassify(a) == FP_SUBNORMAL; break;
    }
    w.put<uint8_t>(in.d[0], l, r ? 1 : 0);
  });
}

// ---- Conversions ----

// Float to integer: rounded as `mode` says (0 nearest even, 1 toward zero, 2 down, 3 up),
// then saturated to the integer's range; NaN gives 0, as the hardware does.
template <typename To, typename From>
To float_to_integer(From value, uint8_t mode) {
  if (std::isnan(value)) return 0;
  long double r = value;
  switch (mode) {
    case 0: r = std::nearbyint(static_cast<long double>(value)); break;
    case 1: r = std::trunc(static_cast<long double>(value)); break;
    case 2: r = std::floor(static_cast<long double>(value)); break;
    default: r = std::ceil(static_cast<long double>(value)); break;
  }
  if (r <= static_cast<long double>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  if (r >= static_cast<long double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(r);
}

// cvt.FRND.F.F (integral rounding of a float).
template <typename T>
T round_integral(T value, uint8_t mode) {
  switch (mode) {
    case 0: return std::nearbyint(value);
    case 1: return std::trunc(value);
    case 2: return std::floor(value);
    default: return std::ceil(value);
  }
}

// cvt: mode is the integer rounding for float to integer and float to float (integral); bit 3
// saturates an integer result to the destination's range (integer to integer).
template <typename To, typename From>
void cvt(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const From value = w.get<From>(in.a, l);
    To result;
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
      result = float_to_integer<To>(value, in.mode & 3);
    } else if constexpr (std::is_floating_point_v<From> && std::is_floating_point_v<To>) {
      if (in.mode & 4) result = static_cast<To>(round_integral<From>(value, in.mode & 3));
      else result = static_cast<To>(value);
    } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
      if ((in.mode & 8) != 0) {
        const __int128 v = value;
        const __int128 lo = std::numeric_limits<To>::min(), hi = std::numeric_limits<To>::max();
        result = static_cast<To>(v < lo ? lo : v > hi ? hi : v);
      } else {
        result = static_cast<To>(value);
      }
    } else {
      result = static_cast<To>(value);
    }
    w.put<To>(in.d[0], l, result);
  });
}

// Half precision, in .b16 registers: IEEE binary16, rounded to nearest even from a double
// (exact for every float and for the doubles a half can come from).
inline uint16_t half_from(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  if (exponent == 0x7ff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa != 0 ? 0x200 : 0));
  const double magnitude = std::fabs(value);
  if (magnitude >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  // Scaled so that one unit in the last place of the half is 1, then rounded to an integer.
  int e = 0;
  (void)std::frexp(magnitude, &e);                  // magnitude = m * 2^e, m in [0.5, 1)
  const int unit_exponent = std::max(e - 11, -24);  // subnormals: a unit of 2^-24
  const double units = std::nearbyint(std::ldexp(magnitude, -unit_exponent));
  uint32_t result = static_cast<uint32_t>(units);
  int biased = unit_exponent + 10 + 15;  // the exponent field when `result` has 11 bits
  if (result == 0) return sign;
  if (result >= 2048) {  // rounding carried into a new bit
    result >>= 1;
    ++biased;
  }
  if (result < 1024) return static_cast<uint16_t>(sign | result);  // subnormal
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(biased) << 10) | (result & 0x3ff));
}

inline double half_to(uint16_t half) {
  const double sign = (half & 0x8000) != 0 ? -1.0 : 1.0;
  const int exponent = (half >> 10) & 0x1f;
  const int mantissa = half & 0x3ff;
  if (exponent == 0x1f) return mantissa != 0 ? std::nan("") : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

template <typename From>
void cvt_to_half(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes,
            [&](unsigned l) { w.put<uint16_t>(in.d[0], l, half_from(static_cast<double>(w.get<From>(in.a, l)))); });
}
template <typename To>
void cvt_from_half(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) { w.put<To>(in.d[0], l, static_cast<To>(half_to(w.get<uint16_t>(in.a, l)))); });
}

// Runs `inner` under the SSE control word the instruction's rounding mode and .ftz ask for,
// then clamps a `.sat` result to [0, 1] (NaN to 0).
template <typename T>
void clamp_to_unit(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const T v = w.get<T>(in.d[0], l);
    w.put<T>(in.d[0], l, std::isnan(v) ? T(0) : v < T(0) ? T(0) : v > T(1) ? T(1) : v);
  });
}

inline void adjusted(Warp &w, const Instruction &in, uint32_t lanes) {
  if (in.mxcsr != 0) {
    const unsigned saved = _mm_getcsr();
    _mm_setcsr((saved & ~0xE040u) | in.mxcsr);
    in.inner(w, in, lanes);
    _mm_setcsr(saved);
  } else {
    in.inner(w, in, lanes);
  }
  if (in.saturate == 4) clamp_to_unit<float>(w, in, lanes);
  if (in.saturate == 8) clamp_to_unit<double>(w, in, lanes);
}

// NOLINTEND(bugprone-signed-char-misuse)

}  // namespace leaseguard::sim::ptx::ops
