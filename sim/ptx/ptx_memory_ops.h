// Handlers for PTX's memory, atomic and warp-wide instructions (ld, st, atom, red, cvta,
// shfl, vote, match, redux, activemask) and the clocks.
#pragma once

#include <time.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ptx_warp.h"

namespace leaseguard::sim::ptx::ops {

// Element types of memory accesses, as read into (sign- or zero-extended) and written from
// 64-bit register slots.
template <typename T>
inline T load_relaxed(const unsigned char *at) {
  if constexpr (sizeof(T) <= 8 && std::is_integral_v<T>) {
    return __atomic_load_n(reinterpret_cast<const T *>(at), __ATOMIC_RELAXED);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits bits = __atomic_load_n(reinterpret_cast<const Bits *>(at), __ATOMIC_RELAXED);
    T value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
}
template <typename T>
inline void store_relaxed(unsigned char *at, T value) {
  if constexpr (std::is_integral_v<T>) {
    __atomic_store_n(reinterpret_cast<T *>(at), value, __ATOMIC_RELAXED);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    Bits bits;
    std::memcpy(&bits, &value, sizeof bits);
    __atomic_store_n(reinterpret_cast<Bits *>(at), bits, __ATOMIC_RELAXED);
  }
}

inline uint64_t address_of(const Warp &w, const Instruction &in, unsigned l) {
  return w.get<uint64_t>(in.a, l) + static_cast<uint64_t>(in.offset);
}
// Shared, local and param addresses are 32-bit offsets where a 32-bit register holds them.
inline uint64_t space_address(const Warp &w, const Instruction &in, unsigned l) {
  const Space space = static_cast<Space>(in.space);
  if (space == Space::Shared || space == Space::Local || space == Space::Param)
    return static_cast<uint32_t>(w.get<uint32_t>(in.a, l) + static_cast<uint32_t>(in.offset));
  return address_of(w, in, l);
}

// ld.SPACE[.vN].T d, [a+offset]: T the element as stored (its sign extends it).
template <typename T>
void load(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    if (w.fault != LaunchStatus::Done) return;
    const uint32_t bytes = sizeof(T) * in.vector;
    unsigned char *at = w.reach(space_address(w, in, l), bytes, static_cast<Space>(in.space), l, in);
    if (at == nullptr) return;
    for (unsigned i = 0; i < in.vector; ++i) {
      const T value = load_relaxed<T>(at + i * sizeof(T));
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) w.put<int64_t>(in.d[i], l, value);
      else if constexpr (std::is_integral_v<T>) w.put<uint64_t>(in.d[i], l, value);
      else w.put<T>(in.d[i], l, value);
    }
  });
}

template <typename T>
void store(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    if (w.fault != LaunchStatus::Done) return;
    const uint32_t bytes = sizeof(T) * in.vector;
    unsigned char *at = w.reach(space_address(w, in, l), bytes, static_cast<Space>(in.space), l, in);
    if (at == nullptr) return;
    for (unsigned i = 0; i < in.vector; ++i) store_relaxed<T>(at + i * sizeof(T), w.get<T>(in.v[i], l));
  });
}

// Atomics: mode names the operation.
enum AtomicOp : uint8_t { AtomAdd, AtomMin, AtomMax, AtomInc, AtomDec, AtomExch, AtomCas, AtomAnd, AtomOr, AtomXor };

template <typename T>
T atomic_apply(uint8_t op, T old, T b) {
  switch (op) {
    case AtomAdd:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(old) + static_cast<std::make_unsigned_t<T>>(b));
      else return old + b;
    case AtomMin: return b < old ? b : old;
    case AtomMax: return b > old ? b : old;
    case AtomInc:
      if constexpr (std::is_integral_v<T>) return old >= b ? T(0) : static_cast<T>(old + 1);
      else return old;
    case AtomDec:
      if constexpr (std::is_integral_v<T>) return (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      else return old;
    case AtomExch: return b;
    case AtomAnd:
      if constexpr (std::is_integral_v<T>) return old & b;
      else return old;
    case AtomOr:
      if constexpr (std::is_integral_v<T>) return old | b;
      else return old;
    case AtomXor:
      if constexpr (std::is_integral_v<T>) return old ^ b;
      else return old;
    default: return old;
  }
}

// atom.SPACE.OP.T d, [a], b[, c]  /  red.SPACE.OP.T [a], b: a compare-and-swap loop on the
// host's word, so blocks on several host threads add up as the device adds up.
template <typename T>
void atomic(Warp &w, const Instruction &in, uint32_t lanes) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  each_lane(lanes, [&](unsigned l) {
    if (w.fault != LaunchStatus::Done) return;
    unsigned char *at = w.reach(space_address(w, in, l), sizeof(T), static_cast<Space>(in.space), l, in);
    if (at == nullptr) return;
    auto *word = reinterpret_cast<Bits *>(at);
    const T b = w.get<T>(in.b, l);
    Bits expected = __atomic_load_n(word, __ATOMIC_RELAXED);
    T old;
    for (;;) {
      std::memcpy(&old, &expected, sizeof old);
      T next;
      if (in.mode == AtomCas) {
        if (old != b) break;
        next = w.get<T>(in.c, l);
      } else {
        next = atomic_apply<T>(in.mode, old, b);
      }
      Bits desired;
      std::memcpy(&desired, &next, sizeof desired);
      if (__atomic_compare_exchange_n(word, &expected, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) break;
    }
    if (in.d[0] != kNoRegister) w.put<T>(in.d[0], l, old);
  });
}

// cvta: mode 0 from SPACE to generic, 1 to SPACE from generic (in.space the space).
inline void cvta(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    uint64_t base = 0;
    switch (static_cast<Space>(in.space)) {
      case Space::Shared: base = reinterpret_cast<uint64_t>(w.shared); break;
      case Space::Local: base = reinterpret_cast<uint64_t>(w.frames + l * w.frame_size); break;
      case Space::Param: base = reinterpret_cast<uint64_t>(w.arguments); break;
      default: break;
    }
    const uint64_t a = w.get<uint64_t>(in.a, l);
    w.put<uint64_t>(in.d[0], l, in.mode == 0 ? (base == 0 ? a : base + static_cast<uint32_t>(a)) : a - base);
  });
}

// shfl.sync.MODE.b32 d[|p], a, b, c, membermask (mode 0 up, 1 down, 2 bfly, 3 idx), as the
// PTX ISA computes the source lane; a lane whose source is out of its segment reads its own
// value, and p says whether the source was in the segment.
inline void shfl(Warp &w, const Instruction &in, uint32_t lanes) {
  uint32_t values[kWarpSize];
  for (unsigned l = 0; l < kWarpSize; ++l) values[l] = w.get<uint32_t>(in.a, l);
  each_lane(lanes, [&](unsigned l) {
    const int32_t b = static_cast<int32_t>(w.get<uint32_t>(in.b, l));
    const uint32_t c = w.get<uint32_t>(in.c, l);
    const int32_t segment = static_cast<int32_t>((c >> 8) & 31), clamp = static_cast<int32_t>(c & 31);
    const int32_t lane = static_cast<int32_t>(l);
    const int32_t max_lane = (lane & segment) | (clamp & ~segment), min_lane = lane & segment;
    int32_t j = lane;
    bool valid = false;
    switch (in.mode) {
      case 0:
        j = lane - b;
        valid = j >= max_lane;
        break;
      case 1:
        j = lane + b;
        valid = j <= max_lane;
        break;
      case 2:
        j = lane ^ b;
        valid = j <= max_lane;
        break;
      default:
        j = min_lane | (b & 31 & ~segment);
        valid = j <= max_lane;
        break;
    }
    if (!valid || j < 0 || j >= static_cast<int32_t>(kWarpSize)) j = lane;
    // A source lane that does not take part (inactive, or outside the member mask): the PTX
    // ISA leaves the value undefined; it reads as 0 here.
    w.put<uint32_t>(in.d[0], l, ((lanes >> j) & 1u) != 0 ? values[j] : 0);
    if (in.d[1] != kNoRegister) w.put<uint8_t>(in.d[1], l, valid ? 1 : 0);
  });
}

// vote.sync.MODE: mode 0 all, 1 any, 2 uni (pred), 3 ballot (b32); b the member mask, a the
// predicate, mode bit 4: a negated.
inline void vote(Warp &w, const Instruction &in, uint32_t lanes) {
  uint32_t ballot = 0;
  const bool negate = (in.mode & 16) != 0;
  each_lane(lanes, [&](unsigned l) {
    if ((w.get<uint8_t>(in.a, l) != 0) != negate) ballot |= 1u << l;
  });
  const uint8_t mode = in.mode & 15;
  each_lane(lanes, [&](unsigned l) {
    switch (mode) {
      case 0: w.put<uint8_t>(in.d[0], l, ballot == lanes); break;
      case 1: w.put<uint8_t>(in.d[0], l, ballot != 0); break;
      case 2: w.put<uint8_t>(in.d[0], l, ballot == 0 || ballot == lanes); break;
      default: w.put<uint32_t>(in.d[0], l, ballot); break;
    }
  });
}

inline void activemask(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) { w.put<uint32_t>(in.d[0], l, lanes); });
}

// match.sync.any.T d, a, mask: the lanes holding the same value; match.all: all or none.
template <typename T>
void match(Warp &w, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    const T mine = w.get<T>(in.a, l);
    uint32_t same = 0;
    each_lane(lanes, [&](unsigned k) {
      if (w.get<T>(in.a, k) == mine) same |= 1u << k;
    });
    if (in.mode == 0) {
      w.put<uint32_t>(in.d[0], l, same);
    } else {
      w.put<uint32_t>(in.d[0], l, same == lanes ? lanes : 0);
      if (in.d[1] != kNoRegister) w.put<uint8_t>(in.d[1], l, same == lanes ? 1 : 0);
    }
  });
}

// redux.sync.OP.T d, a, mask (mode: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor).
template <typename T>
void redux(Warp &w, const Instruction &in, uint32_t lanes) {
  bool first = true;
  T r = 0;
  each_lane(lanes, [&](unsigned l) {
    const T v = w.get<T>(in.a, l);
    if (first) {
      r = v;
      first = false;
      return;
    }
    switch (in.mode) {
      case 0: r = static_cast<T>(static_cast<uint32_t>(r) + static_cast<uint32_t>(v)); break;
      case 1: r = v < r ? v : r; break;
      case 2: r = v > r ? v : r; break;
      case 3: r &= v; break;
      case 4: r |= v; break;
      default: r ^= v; break;
    }
  });
  each_lane(lanes, [&](unsigned l) { w.put<T>(in.d[0], l, r); });
}

// %clock, %clock64: the host's time stamp counter; %globaltimer: nanoseconds.
inline void read_clock(Warp &w, const Instruction &in, uint32_t lanes) {
  uint64_t value = 0;
  if (in.mode == 2) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    value = static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
  } else {
    value = __rdtsc();
  }
  each_lane(lanes, [&](unsigned l) {
    if (in.mode == 0) w.put<uint32_t>(in.d[0], l, static_cast<uint32_t>(value));
    else w.put<uint64_t>(in.d[0], l, value);
  });
}

// Instructions that order memory or only hint (membar, fence, prefetch, nanosleep, ...):
// nothing to do where a block runs on one host thread and global accesses are atomic.
inline void nothing(Warp &, const Instruction &, uint32_t) {}

}  // namespace leaseguard::sim::ptx::ops
