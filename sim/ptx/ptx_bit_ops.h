// Handlers for PTX's bit-field and byte instructions: bfe, bfi, bfind, prmt, lop3, shf, fns
// is not among them (refused). Semantics as the PTX ISA defines them.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ptx_warp.h"

namespace leaseguard::sim::ptx::ops {

// bfe.T d, a, pos, len: the field, sign-extended from its top bit for signed types.
template <typename T>
void bfe(Warp &w, const Instruction &in, uint32_t lanes) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned kBits = 8 * sizeof(T);
  each_lane(lanes, [&](unsigned l) {
    const U a = static_cast<U>(w.get<T>(in.a, l));
    const unsigned pos = w.get<uint32_t>(in.b, l) & 0xff, len = w.get<uint32_t>(in.c, l) & 0xff;
    U field = 0;
    for (unsigned i = 0; i < len && i < kBits; ++i) {
      const unsigned from = pos + i < kBits ? pos + i : kBits - 1;
      U bit = (pos + i < kBits) ? static_cast<U>((a >> from) & 1u) : 0;
      if (std::is_signed_v<T> && pos + i >= kBits) bit = static_cast<U>((a >> (kBits - 1)) & 1u);
      field = static_cast<U>(field | (bit << i));
    }
    if (std::is_signed_v<T> && len > 0 && len < kBits) {
      const unsigned top = len - 1;
      if ((field >> top) & 1u) field = static_cast<U>(field | (~U(0) << len));
    } else if (std::is_signed_v<T> && len == 0) {
      field = 0;
    }
    w.put<T>(in.d[0], l, static_cast<T>(field));
  });
}

// bfi.T d, f, b, pos, len: b with len bits at pos replaced by f's low bits.
template <typename T>
void bfi(Warp &w, const Instruction &in, uint32_t lanes) {
  constexpr unsigned kBits = 8 * sizeof(T);
  each_lane(lanes, [&](unsigned l) {
    const T f = w.get<T>(in.a, l);
    T result = w.get<T>(in.b, l);
    const unsigned pos = w.get<uint32_t>(in.c, l) & 0xff, len = w.get<uint32_t>(in.e, l) & 0xff;
    for (unsigned i = 0; i < len && pos + i < kBits; ++i) {
      const T bit = static_cast<T>(T(1) << (pos + i));
      result = static_cast<T>(((f >> i) & 1u) ? (result | bit) : (result & ~bit));
    }
    w.put<T>(in.d[0], l, result);
  });
}

// bfind[.shiftamt].T d, a: the most significant non-sign bit, or all ones.
template <typename T>
void bfind(Warp &w, const Instruction &in, uint32_t lanes) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned kBits = 8 * sizeof(T);
  each_lane(lanes, [&](unsigned l) {
    T a = w.get<T>(in.a, l);
    if (std::is_signed_v<T> && a < 0) a = static_cast<T>(~a);
    const U v = static_cast<U>(a);
    uint32_t d = UINT32_MAX;
    if (v != 0) {
      d = kBits - 1 - static_cast<uint32_t>(__builtin_clzll(static_cast<uint64_t>(v)) - (64 - kBits));
      if (in.mode != 0) d = kBits - 1 - d;
    }
    w.put<uint32_t>(in.d[0], l, d);
  });
}

// prmt.b32[.mode] d, a, b, c: bytes of {b, a} picked by c's selectors (mode 0: the default
// form, 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16).
inline void prmt(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const uint64_t source = (uint64_t{w.get<uint32_t>(in.b, l)} << 32) | w.get<uint32_t>(in.a, l);
    const uint32_t c = w.get<uint32_t>(in.c, l);
    auto byte = [&](unsigned i) { return static_cast<uint32_t>((source >> (8 * (i & 7))) & 0xff); };
    uint32_t d = 0;
    if (in.mode == 0) {
      for (unsigned i = 0; i < 4; ++i) {
        const unsigned selector = (c >> (4 * i)) & 0xf;
        uint32_t value = byte(selector & 7);
        if (selector & 8) value = (value & 0x80) ? 0xff : 0;
        d |= value << (8 * i);
      }
    } else {
      const unsigned s = c & 3;
      static const uint8_t kTable[6][4][4] = {
          {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
          {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
          {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
          {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
          {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
          {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
      };
      for (unsigned i = 0; i < 4; ++i) d |= byte(kTable[in.mode - 1][s][i]) << (8 * i);
    }
    w.put<uint32_t>(in.d[0], l, d);
  });
}

// lop3.b32 d, a, b, c, immLut: any function of three inputs, by its truth table.
inline void lop3(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const uint32_t a = w.get<uint32_t>(in.a, l), b = w.get<uint32_t>(in.b, l), c = w.get<uint32_t>(in.c, l);
    const uint32_t lut = w.get<uint32_t>(in.e, l);
    uint32_t d = 0;
    for (unsigned k = 0; k < 8; ++k)
      if ((lut >> k) & 1u) {
        const uint32_t ta = (k & 4) ? a : ~a, tb = (k & 2) ? b : ~b, tc = (k & 1) ? c : ~c;
        d |= ta & tb & tc;
      }
    w.put<uint32_t>(in.d[0], l, d);
  });
}

// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: a funnel shift of {b, a} (mode bit 0: right, bit 1: clamp).
inline void shf(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const uint64_t both = (uint64_t{w.get<uint32_t>(in.b, l)} << 32) | w.get<uint32_t>(in.a, l);
    uint32_t n = w.get<uint32_t>(in.c, l);
    n = (in.mode & 2) ? (n > 32 ? 32 : n) : (n & 31);
    const uint32_t d = (in.mode & 1) ? static_cast<uint32_t>(both >> n) : static_cast<uint32_t>((both << n) >> 32);
    w.put<uint32_t>(in.d[0], l, d);
  });
}

// mov.b64 d, {lo, hi} and mov.b32 d, {lo, hi} (halves): packing; unpacking the reverse.
template <typename Whole, typename Half>
void pack(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const Whole lo = w.get<Half>(in.v[0], l), hi = w.get<Half>(in.v[1], l);
    w.put<Whole>(in.d[0], l, static_cast<Whole>(lo | (hi << (8 * sizeof(Half)))));
  });
}
template <typename Whole, typename Half>
void unpack(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const Whole whole = w.get<Whole>(in.a, l);
    if (in.d[0] != kNoRegister) w.put<Half>(in.d[0], l, static_cast<Half>(whole));
    if (in.d[1] != kNoRegister) w.put<Half>(in.d[1], l, static_cast<Half>(whole >> (8 * sizeof(Half))));
  });
}

// dp4a.u32.u32 and friends are refused; sad.T d, a, b, c: |a - b| + c.
template <typename T>
void sad(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const T a = w.get<T>(in.a, l), b = w.get<T>(in.b, l);
    using U = std::make_unsigned_t<T>;
    const U diff = a > b ? static_cast<U>(static_cast<U>(a) - static_cast<U>(b))
                         : static_cast<U>(static_cast<U>(b) - static_cast<U>(a));
    w.put<T>(in.d[0], l, static_cast<T>(diff + static_cast<U>(w.get<T>(in.c, l))));
  });
}

}  // namespace leaseguard::sim::ptx::ops
