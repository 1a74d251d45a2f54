// PTX instructions decoded: an opcode, its modifiers and types, and its operands become an
// Instruction with the handler that runs it (ptx_ops.h, ptx_bit_ops.h, ptx_memory_ops.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "ptx_bit_ops.h"
#include "ptx_decode_internal.h"
#include "ptx_memory_ops.h"
#include "ptx_ops.h"

namespace leaseguard::sim::ptx {

Type type_named(const std::string &s) {
  static const struct {
    const char *name;
    Type type;
  } kTypes[] = {{"s8", Type::S8},   {"s16", Type::S16},     {"s32", Type::S32},   {"s64", Type::S64},
                {"u8", Type::U8},   {"u16", Type::U16},     {"u32", Type::U32},   {"u64", Type::U64},
                {"b8", Type::B8},   {"b16", Type::B16},     {"b32", Type::B32},   {"b64", Type::B64},
                {"f16", Type::F16}, {"f16x2", Type::F16x2}, {"bf16", Type::BF16}, {"f32", Type::F32},
                {"f64", Type::F64}, {"pred", Type::Pred},   {"b128", Type::B128}, {"bf16x2", Type::F16x2}};
  for (const auto &t : kTypes)
    if (s == t.name) return t.type;
  return Type::None;
}

unsigned type_size(Type t) {
  switch (t) {
    case Type::S8:
    case Type::U8:
    case Type::B8:
    case Type::Pred: return 1;
    case Type::S16:
    case Type::U16:
    case Type::B16:
    case Type::F16:
    case Type::BF16: return 2;
    case Type::S32:
    case Type::U32:
    case Type::B32:
    case Type::F32:
    case Type::F16x2: return 4;
    case Type::S64:
    case Type::U64:
    case Type::B64:
    case Type::F64: return 8;
    case Type::B128: return 16;
    default: return 0;
  }
}
bool is_float(Type t) {
  return t == Type::F32 || t == Type::F64 || t == Type::F16 || t == Type::BF16 || t == Type::F16x2;
}
bool is_signed(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }

namespace {

// Calls make(T{}) with the C++ type of a PTX type; b types are unsigned. Null: no such type.
template <typename Make>
Handler by_type(Type t, Make make) {
  switch (t) {
    case Type::S8: return make(int8_t{});
    case Type::S16: return make(int16_t{});
    case Type::S32: return make(int32_t{});
    case Type::S64: return make(int64_t{});
    case Type::U8:
    case Type::B8:
    case Type::Pred: return make(uint8_t{});
    case Type::U16:
    case Type::B16: return make(uint16_t{});
    case Type::U32:
    case Type::B32: return make(uint32_t{});
    case Type::U64:
    case Type::B64: return make(uint64_t{});
    case Type::F32: return make(float{});
    case Type::F64: return make(double{});
    default: return nullptr;
  }
}

template <typename T>
constexpr bool kInteger = std::is_integral_v<T>;

struct Decoding {
  const Statement &s;
  FunctionScope &scope;
  Instruction &out;
  std::string &refusal;
  std::string &error;
  uint32_t index;
  std::set<std::string> modifiers;
  std::vector<Type> types;

  bool has(const char *m) const { return modifiers.count(m) != 0; }
  Type type(size_t i = 0) const { return i < types.size() ? types[i] : Type::None; }

  bool refuse(const std::string &why) {
    refusal = why;
    return false;
  }
  bool fail(const std::string &why) {
    if (error.empty()) error = why;
    return false;
  }
  uint32_t src(size_t i, Type t) {
    if (i >= s.operands.size()) {
      fail("missing operand");
      return kNoRegister;
    }
    return scope.source(s.operands[i], t, error);
  }
  uint32_t dst(size_t i) {
    if (i >= s.operands.size()) {
      fail("missing operand");
      return kNoRegister;
    }
    return scope.destination(s.operands[i].text, error);
  }
  bool operands(size_t n) {
    if (s.operands.size() < n) return fail("expects " + std::to_string(n) + " operands");
    return true;
  }
};

// The SSE control word for an instruction's rounding and .ftz (0: the default).
uint32_t control_word(const Decoding &d) {
  uint32_t word = 0;
  if (d.has("rz") || d.has("rzi")) word |= 0x6000;
  else if (d.has("rm") || d.has("rmi")) word |= 0x2000;
  else if (d.has("rp") || d.has("rpi")) word |= 0x4000;
  if (d.has("ftz")) word |= 0x8040;
  return word;
}

// Sets the handler, wrapped where the instruction names a rounding mode, .ftz or .sat.
bool finish_float(Decoding &d, Handler handler, Type t) {
  if (handler == nullptr) return d.refuse("type ." + (d.s.opcode.size() > 1 ? d.s.opcode.back() : std::string()));
  d.out.run = handler;
  d.out.mxcsr = control_word(d);
  if (d.has("sat") && is_float(t)) d.out.saturate = t == Type::F64 ? 8 : 4;
  if (d.out.mxcsr != 0 || d.out.saturate != 0) {
    d.out.inner = handler;
    d.out.run = &ops::adjusted;
  }
  return true;
}

template <typename Op, bool Integers, bool Floats>
bool arithmetic(Decoding &d, Type t) {
  if (!d.operands(3)) return false;
  d.out.d[0] = d.dst(0);
  d.out.a = d.src(1, t);
  d.out.b = d.src(2, t);
  const Handler h = by_type(t, [&](auto tag) -> Handler {
    using T = decltype(tag);
    if constexpr (kInteger<T> && Integers) return &ops::binary<T, Op>;
    else if constexpr (!kInteger<T> && Floats) return &ops::binary<T, Op>;
    else return nullptr;
  });
  return finish_float(d, h, t);
}

template <typename Op>
bool integer_only(Decoding &d, Type t) {
  return arithmetic<Op, true, false>(d, t);
}

template <typename Op, bool Integers, bool Floats>
bool one_operand(Decoding &d, Type t) {
  if (!d.operands(2)) return false;
  d.out.d[0] = d.dst(0);
  d.out.a = d.src(1, t);
  const Handler h = by_type(t, [&](auto tag) -> Handler {
    using T = decltype(tag);
    if constexpr (kInteger<T> && Integers) return &ops::unary<T, Op>;
    else if constexpr (!kInteger<T> && Floats) return &ops::unary<T, Op>;
    else return nullptr;
  });
  return finish_float(d, h, t);
}

template <typename Op, bool Integers, bool Floats>
bool three_operands(Decoding &d, Type t) {
  if (!d.operands(4)) return false;
  d.out.d[0] = d.dst(0);
  d.out.a = d.src(1, t);
  d.out.b = d.src(2, t);
  d.out.c = d.src(3, t);
  const Handler h = by_type(t, [&](auto tag) -> Handler {
    using T = decltype(tag);
    if constexpr (kInteger<T> && Integers) return &ops::ternary<T, Op>;
    else if constexpr (!kInteger<T> && Floats) return &ops::ternary<T, Op>;
    else return nullptr;
  });
  return finish_float(d, h, t);
}

// The wide type of mul.wide / mad.wide.
Type wider(Type t) {
  switch (t) {
    case Type::S16: return Type::S32;
    case Type::U16: return Type::U32;
    case Type::S32: return Type::S64;
    case Type::U32: return Type::U64;
    default: return Type::None;
  }
}

bool multiply(Decoding &d, bool add) {
  const Type t = d.type();
  if (d.has("wide")) {
    if (!d.operands(add ? 4 : 3)) return false;
    d.out.d[0] = d.dst(0);
    d.out.a = d.src(1, t);
    d.out.b = d.src(2, t);
    if (add) d.out.c = d.src(3, wider(t));
    switch (t) {
      case Type::S16: d.out.run = add ? &ops::mad_wide<int16_t, int32_t> : &ops::mul_wide<int16_t, int32_t>; break;
      case Type::U16: d.out.run = add ? &ops::mad_wide<uint16_t, uint32_t> : &ops::mul_wide<uint16_t, uint32_t>; break;
      case Type::S32: d.out.run = add ? &ops::mad_wide<int32_t, int64_t> : &ops::mul_wide<int32_t, int64_t>; break;
      case Type::U32: d.out.run = add ? &ops::mad_wide<uint32_t, uint64_t> : &ops::mul_wide<uint32_t, uint64_t>; break;
      default: return d.refuse("type");
    }
    return true;
  }
  if (d.has("hi"))
    return add ? three_operands<ops::MadHi, true, false>(d, t) : arithmetic<ops::MulHi, true, false>(d, t);
  if (is_float(t)) return add ? three_operands<ops::Fma, false, true>(d, t) : arithmetic<ops::MulLo, false, true>(d, t);
  return add ? three_operands<ops::MadLo, true, false>(d, t) : arithmetic<ops::MulLo, true, false>(d, t);
}

uint8_t comparison(const std::string &name, bool &ok) {
  static const char *const kNames[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                       "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  for (uint8_t i = 0; i < 14; ++i)
    if (name == kNames[i]) return i;
  if (name == "lo") return ops::Lt;
  if (name == "ls") return ops::Le;
  if (name == "hi") return ops::Gt;
  if (name == "hs") return ops::Ge;
  ok = false;
  return 0;
}

bool decode_setp(Decoding &d, bool set) {
  bool ok = false;
  uint8_t op = 0;
  uint8_t combine = 0;
  for (const std::string &m : d.modifiers) {
    bool named = true;
    const uint8_t c = comparison(m, named);
    if (named) op = c, ok = true;
    if (m == "and") combine = 1;
    if (m == "or") combine = 2;
    if (m == "xor") combine = 3;
  }
  if (!ok) return d.fail("no comparison");
  const Type t = set ? d.type(1) : d.type();
  if (!d.operands(combine != 0 ? 4 : 3)) return false;
  const Operand &first = d.s.operands[0];
  d.out.d[0] = d.scope.destination(first.text, d.error);
  if (!first.second.empty()) d.out.d[1] = d.scope.destination(first.second, d.error);
  d.out.a = d.src(1, t);
  d.out.b = d.src(2, t);
  d.out.mode = static_cast<uint8_t>(op | (combine << 4));
  if (combine != 0) {
    d.out.c = d.src(3, Type::Pred);
    if (d.s.operands[3].negated) d.out.mode |= 64;
  }
  if (set) {
    const Type to = d.type();
    d.out.run = by_type(t, [&](auto tag) -> Handler {
      using T = decltype(tag);
      if (to == Type::F32) return &ops::set<T, float>;
      if (to == Type::S32) return &ops::set<T, int32_t>;
      return &ops::set<T, uint32_t>;
    });
    return d.out.run != nullptr || d.refuse("type");
  }
  return finish_float(d, by_type(t, [&](auto tag) -> Handler { return &ops::setp<decltype(tag)>; }), t);
}

bool decode_cvt(Decoding &d) {
  const Type to = d.type(0), from = d.type(1);
  if (!d.operands(2)) return false;
  d.out.d[0] = d.dst(0);
  d.out.a = d.src(1, from);
  if (to == Type::F16 || from == Type::F16) {
    Handler h = nullptr;
    if (to == Type::F16 && from == Type::F32) h = &ops::cvt_to_half<float>;
    if (to == Type::F16 && from == Type::F64) h = &ops::cvt_to_half<double>;
    if (from == Type::F16 && to == Type::F32) h = &ops::cvt_from_half<float>;
    if (from == Type::F16 && to == Type::F64) h = &ops::cvt_from_half<double>;
    if (h == nullptr) return d.refuse("cvt of half precision to or from an integer");
    return finish_float(d, h, to);
  }
  uint8_t mode = 0;
  if (d.has("rzi")) mode = 1;
  if (d.has("rmi")) mode = 2;
  if (d.has("rpi")) mode = 3;
  if (d.has("rni") || d.has("rzi") || d.has("rmi") || d.has("rpi")) {
    if (is_float(from) && is_float(to)) mode |= 4;
  } else if (is_float(from) && !is_float(to)) {
    mode = 0;
  }
  if (d.has("sat") && !is_float(to)) mode |= 8;
  d.out.mode = mode;
  const Handler h = by_type(to, [&](auto to_tag) -> Handler {
    using To = decltype(to_tag);
    return by_type(from, [&](auto from_tag) -> Handler { return &ops::cvt<To, decltype(from_tag)>; });
  });
  if (h == nullptr) return d.refuse("cvt types");
  // Integer rounding is the handler's own; the control word is for rounding a float result.
  if (d.has("rni") || d.has("rzi") || d.has("rmi") || d.has("rpi")) {
    d.modifiers.erase("rzi"), d.modifiers.erase("rmi"), d.modifiers.erase("rpi");
  }
  return finish_float(d, h, to);
}

bool decode_mov(Decoding &d) {
  const Type t = d.type();
  if (!d.operands(2)) return false;
  const Operand &to = d.s.operands[0], &from = d.s.operands[1];
  if (from.kind == Operand::Vector) {  // pack
    if (from.elements.size() != 2) return d.refuse("mov of a vector of " + std::to_string(from.elements.size()));
    d.out.d[0] = d.dst(0);
    const Type half = t == Type::B64 ? Type::B32 : Type::B16;
    d.out.v[0] = d.scope.source(from.elements[0], half, d.error);
    d.out.v[1] = d.scope.source(from.elements[1], half, d.error);
    d.out.run = t == Type::B64 ? &ops::pack<uint64_t, uint32_t> : &ops::pack<uint32_t, uint16_t>;
    return true;
  }
  if (to.kind == Operand::Vector) {  // unpack
    if (to.elements.size() != 2) return d.refuse("mov to a vector of " + std::to_string(to.elements.size()));
    for (size_t i = 0; i < 2; ++i)
      d.out.d[i] =
          to.elements[i].kind == Operand::Sink ? kNoRegister : d.scope.destination(to.elements[i].text, d.error);
    d.out.a = d.src(1, t);
    d.out.run = t == Type::B64 ? &ops::unpack<uint64_t, uint32_t> : &ops::unpack<uint32_t, uint16_t>;
    return true;
  }
  d.out.d[0] = d.dst(0);
  if (from.kind == Operand::Name && (from.text == "%clock" || from.text == "%clock64" || from.text == "%globaltimer" ||
                                     from.text == "%clock_hi" || from.text == "%globaltimer_lo")) {
    d.out.mode = from.text == "%globaltimer" ? 2 : from.text == "%clock64" ? 1 : 0;
    d.out.run = &ops::read_clock;
    return true;
  }
  d.out.a = d.src(1, t);
  d.out.run = &ops::unary<uint64_t, ops::Mov>;
  return true;
}

Space space_named(const Decoding &d, bool &named) {
  named = true;
  if (d.has("global")) return Space::Global;
  if (d.has("shared") || d.has("shared::cta")) return Space::Shared;
  if (d.has("local")) return Space::Local;
  if (d.has("const")) return Space::Const;
  if (d.has("param")) return Space::Param;
  named = false;
  return Space::Generic;
}

// The address operand `i`: base register and offset; a symbol names its own space.
bool memory_operand(Decoding &d, size_t i, Space &space) {
  if (i >= d.s.operands.size() || d.s.operands[i].kind != Operand::Address) return d.fail("expects an address");
  Space symbol_space = Space::Generic;
  if (!d.scope.address(d.s.operands[i], d.out.a, d.out.offset, symbol_space, d.error)) return false;
  bool named = false;
  space = space_named(d, named);
  // ld.param of a function's parameter, or of a call's: the thread's frame.
  if (symbol_space == Space::Local && space == Space::Param) space = Space::Local;
  if (!named && symbol_space != Space::Generic) space = symbol_space;
  if (space == Space::Param && !d.scope.in_kernel() && symbol_space == Space::Generic) space = Space::Local;
  d.out.space = static_cast<uint8_t>(space);
  return true;
}

bool vector_width(Decoding &d) {
  d.out.vector = 1;
  if (d.has("v2")) d.out.vector = 2;
  if (d.has("v4")) d.out.vector = 4;
  if (d.has("v8")) return d.refuse("vectors of 8");
  return true;
}

bool decode_load(Decoding &d) {
  const Type t = d.types.empty() ? Type::None : d.types.back();
  if (t == Type::B128 || t == Type::F16x2 || t == Type::BF16) return d.refuse("type");
  if (!vector_width(d) || !d.operands(2)) return false;
  const Operand &to = d.s.operands[0];
  if (d.out.vector > 1) {
    if (to.kind != Operand::Vector || to.elements.size() != d.out.vector) return d.fail("vector operand");
    for (unsigned i = 0; i < d.out.vector; ++i)
      d.out.d[i] = to.elements[i].kind == Operand::Sink ? d.scope.destination("_", d.error)
                                                        : d.scope.destination(to.elements[i].text, d.error);
  } else {
    d.out.d[0] = d.dst(0);
  }
  Space space;
  if (!memory_operand(d, 1, space)) return false;
  d.out.run = by_type(t, [&](auto tag) -> Handler { return &ops::load<decltype(tag)>; });
  if (t == Type::F16) d.out.run = &ops::load<uint16_t>;
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_store(Decoding &d) {
  const Type t = d.types.empty() ? Type::None : d.types.back();
  if (t == Type::B128 || t == Type::F16x2 || t == Type::BF16) return d.refuse("type");
  if (!vector_width(d) || !d.operands(2)) return false;
  Space space;
  if (!memory_operand(d, 0, space)) return false;
  const Operand &from = d.s.operands[1];
  if (d.out.vector > 1) {
    if (from.kind != Operand::Vector || from.elements.size() != d.out.vector) return d.fail("vector operand");
    for (unsigned i = 0; i < d.out.vector; ++i) d.out.v[i] = d.scope.source(from.elements[i], t, d.error);
  } else {
    d.out.v[0] = d.src(1, t);
  }
  d.out.run = by_type(t, [&](auto tag) -> Handler { return &ops::store<decltype(tag)>; });
  if (t == Type::F16) d.out.run = &ops::store<uint16_t>;
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_atomic(Decoding &d, bool reduction) {
  static const struct {
    const char *name;
    ops::AtomicOp op;
  } kOps[] = {{"add", ops::AtomAdd}, {"min", ops::AtomMin},   {"max", ops::AtomMax}, {"inc", ops::AtomInc},
              {"dec", ops::AtomDec}, {"exch", ops::AtomExch}, {"cas", ops::AtomCas}, {"and", ops::AtomAnd},
              {"or", ops::AtomOr},   {"xor", ops::AtomXor}};
  bool found = false;
  for (const auto &o : kOps)
    if (d.has(o.name)) d.out.mode = o.op, found = true;
  if (!found) return d.fail("no atomic operation");
  const Type t = d.types.empty() ? Type::None : d.types.back();
  if (type_size(t) != 4 && type_size(t) != 8) return d.refuse("type");
  if (d.has("v2") || d.has("v4") || d.has("v8")) return d.refuse("vector atomics");
  Space space;
  const size_t first = reduction ? 0 : 1;
  if (!d.operands(first + 2)) return false;
  if (!reduction) d.out.d[0] = d.dst(0);
  if (!memory_operand(d, first, space)) return false;
  d.out.b = d.src(first + 1, t);
  if (d.out.mode == ops::AtomCas) {
    if (!d.operands(first + 3)) return false;
    d.out.c = d.src(first + 2, t);
  }
  d.out.run = by_type(t, [&](auto tag) -> Handler {
    using T = decltype(tag);
    if constexpr (sizeof(T) >= 4) return &ops::atomic<T>;
    else return nullptr;
  });
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_barrier(Decoding &d, const std::string &) {
  if (d.has("warp")) {  // bar.warp.sync: a warp's lanes run together already
    d.out.run = &ops::nothing;
    return true;
  }
  if (d.has("cluster")) return d.refuse("cluster barriers");
  if (d.has("arrive")) return d.refuse("bar.arrive");
  if (d.has("red")) {
    // bar.red.popc.u32 d, a{, b}, {!}c ; bar.red.and.pred / .or.pred
    d.out.control = Control::BarrierReduce;
    d.out.mode = d.has("popc") ? 0 : d.has("and") ? 1 : 2;
    const size_t n = d.s.operands.size();
    if (n < 3) return d.fail("bar.red operands");
    d.out.d[0] = d.dst(0);
    d.out.a = d.src(1, Type::U32);
    d.out.b = n == 4 ? d.src(2, Type::U32) : kNoRegister;
    d.out.c = d.src(n - 1, Type::Pred);
    if (d.s.operands[n - 1].negated) d.out.mode |= 16;
    d.out.run = &ops::nothing;
    return true;
  }
  d.out.control = Control::Barrier;
  d.out.a = d.s.operands.empty() ? kNoRegister : d.src(0, Type::U32);
  d.out.b = d.s.operands.size() > 1 ? d.src(1, Type::U32) : kNoRegister;
  d.out.run = &ops::nothing;
  return true;
}

bool decode_call(Decoding &d) {
  // call[.uni] [(results),] target[, (arguments)][, prototype]
  std::vector<std::string> results, arguments;
  std::string callee;
  for (const Operand &operand : d.s.operands) {
    if (operand.kind == Operand::Vector) {
      std::vector<std::string> &list = callee.empty() ? results : arguments;
      for (const Operand &e : operand.elements) list.push_back(e.text);
    } else if (callee.empty()) {
      callee = operand.text;
    } else {
      return d.refuse("call through a prototype (an indirect call)");
    }
  }
  if (callee.empty()) return d.fail("call without a target");
  if (callee[0] == '%') return d.refuse("indirect call");
  d.scope.call(d.out, results, callee, arguments, d.refusal);
  d.out.run = &ops::nothing;
  return d.refusal.empty();
}

bool decode_warp(Decoding &d, const std::string &op) {
  if (op == "shfl") {
    d.out.mode = d.has("up") ? 0 : d.has("down") ? 1 : d.has("bfly") ? 2 : 3;
    if (!d.operands(4)) return false;
    const Operand &to = d.s.operands[0];
    d.out.d[0] = d.scope.destination(to.text, d.error);
    if (!to.second.empty()) d.out.d[1] = d.scope.destination(to.second, d.error);
    d.out.a = d.src(1, Type::B32);
    d.out.b = d.src(2, Type::B32);
    d.out.c = d.src(3, Type::B32);
    d.out.run = &ops::shfl;
    return true;
  }
  if (op == "vote") {
    d.out.mode = d.has("all") ? 0 : d.has("any") ? 1 : d.has("uni") ? 2 : 3;
    if (!d.operands(2)) return false;
    d.out.d[0] = d.dst(0);
    d.out.a = d.src(1, Type::Pred);
    if (d.s.operands[1].negated) d.out.mode |= 16;
    d.out.run = &ops::vote;
    return true;
  }
  if (op == "activemask") {
    if (!d.operands(1)) return false;
    d.out.d[0] = d.dst(0);
    d.out.run = &ops::activemask;
    return true;
  }
  if (op == "match") {
    d.out.mode = d.has("all") ? 1 : 0;
    if (!d.operands(3)) return false;
    const Operand &to = d.s.operands[0];
    d.out.d[0] = d.scope.destination(to.text, d.error);
    if (!to.second.empty()) d.out.d[1] = d.scope.destination(to.second, d.error);
    const Type t = d.types.empty() ? Type::B32 : d.types.back();
    d.out.a = d.src(1, t);
    d.out.run = type_size(t) == 8 ? &ops::match<uint64_t> : &ops::match<uint32_t>;
    return true;
  }
  // redux
  d.out.mode = d.has("add") ? 0 : d.has("min") ? 1 : d.has("max") ? 2 : d.has("and") ? 3 : d.has("or") ? 4 : 5;
  if (!d.operands(2)) return false;
  const Type t = d.types.empty() ? Type::U32 : d.types.back();
  if (is_float(t)) return d.refuse("redux of floats");
  d.out.d[0] = d.dst(0);
  d.out.a = d.src(1, t);
  d.out.run = t == Type::S32 ? &ops::redux<int32_t> : &ops::redux<uint32_t>;
  return true;
}

bool decode_bits(Decoding &d, const std::string &op) {
  const Type t = d.type();
  if (op == "bfe") {
    if (!d.operands(4)) return false;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, t), d.out.b = d.src(2, Type::U32), d.out.c = d.src(3, Type::U32);
    d.out.run = by_type(t, [&](auto tag) -> Handler {
      using T = decltype(tag);
      if constexpr (kInteger<T> && sizeof(T) >= 4) return &ops::bfe<T>;
      else return nullptr;
    });
  } else if (op == "bfi") {
    if (!d.operands(5)) return false;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, t), d.out.b = d.src(2, t), d.out.c = d.src(3, Type::U32),
    d.out.e = d.src(4, Type::U32);
    d.out.run = type_size(t) == 8 ? &ops::bfi<uint64_t> : &ops::bfi<uint32_t>;
  } else if (op == "bfind") {
    if (!d.operands(2)) return false;
    d.out.mode = d.has("shiftamt") ? 1 : 0;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, t);
    d.out.run = by_type(t, [&](auto tag) -> Handler {
      using T = decltype(tag);
      if constexpr (kInteger<T> && sizeof(T) >= 4) return &ops::bfind<T>;
      else return nullptr;
    });
  } else if (op == "prmt") {
    if (!d.operands(4)) return false;
    static const char *const kModes[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
    for (uint8_t i = 0; i < 6; ++i)
      if (d.has(kModes[i])) d.out.mode = static_cast<uint8_t>(i + 1);
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, Type::B32), d.out.b = d.src(2, Type::B32), d.out.c = d.src(3, Type::B32);
    d.out.run = &ops::prmt;
  } else if (op == "lop3") {
    if (!d.operands(5)) return false;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, Type::B32), d.out.b = d.src(2, Type::B32), d.out.c = d.src(3, Type::B32),
    d.out.e = d.src(4, Type::B32);
    d.out.run = &ops::lop3;
  } else if (op == "shf") {
    if (!d.operands(4)) return false;
    d.out.mode = static_cast<uint8_t>((d.has("r") ? 1 : 0) | (d.has("clamp") ? 2 : 0));
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, Type::B32), d.out.b = d.src(2, Type::B32), d.out.c = d.src(3, Type::U32);
    d.out.run = &ops::shf;
  } else {  // sad
    if (!d.operands(4)) return false;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, t), d.out.b = d.src(2, t), d.out.c = d.src(3, t);
    d.out.run = by_type(t, [&](auto tag) -> Handler {
      using T = decltype(tag);
      if constexpr (kInteger<T>) return &ops::sad<T>;
      else return nullptr;
    });
  }
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_math(Decoding &d, const std::string &op) {
  const Type t = d.type();
  if (op == "rcp") return one_operand<ops::Rcp, false, true>(d, t);
  if (op == "sqrt") return one_operand<ops::Sqrt, false, true>(d, t);
  if (op == "rsqrt") return one_operand<ops::Rsqrt, false, true>(d, t);
  if (t == Type::F64 && op != "rcp" && op != "sqrt" && op != "rsqrt") return d.refuse("type .f64");
  if (op == "sin") return one_operand<ops::Sin, false, true>(d, t);
  if (op == "cos") return one_operand<ops::Cos, false, true>(d, t);
  if (op == "ex2") return one_operand<ops::Ex2, false, true>(d, t);
  if (op == "lg2") return one_operand<ops::Lg2, false, true>(d, t);
  return one_operand<ops::Tanh, false, true>(d, t);
}

// Instructions the interpreter does not run, with what they are.
const char *unsupported(const std::string &op) {
  static const struct {
    const char *op;
    const char *what;
  } kRefused[] = {
      {"mma", "tensor-core mma"},
      {"wmma", "tensor-core wmma"},
      {"wgmma", "tensor-core wgmma"},
      {"ldmatrix", "ldmatrix"},
      {"stmatrix", "stmatrix"},
      {"cp", "cp.async (asynchronous copies)"},
      {"tex", "texture fetches"},
      {"tld4", "texture fetches"},
      {"txq", "texture queries"},
      {"suld", "surface loads"},
      {"sust", "surface stores"},
      {"sured", "surface reductions"},
      {"suq", "surface queries"},
      {"mbarrier", "mbarrier (asynchronous barriers)"},
      {"griddepcontrol", "programmatic dependent launch"},
      {"multimem", "multimem"},
      {"tensormap", "tensor maps"},
      {"setmaxnreg", "setmaxnreg"},
      {"elect", "elect.sync"},
      {"alloca", "alloca"},
      {"stacksave", "stacksave"},
      {"stackrestore", "stackrestore"},
      {"brx", "brx.idx (jump tables)"},
      {"dp4a", "dp4a"},
      {"dp2a", "dp2a"},
      {"fns", "fns"},
      {"istypep", "istypep"},
      {"pmevent", nullptr},
  };
  for (const auto &r : kRefused)
    if (op == r.op) return r.what;
  return nullptr;
}

// Integer and float arithmetic that is not multiplication.
bool decode_add_sub(Decoding &d, const std::string &op) {
  const Type t = d.type();
  Instruction &out = d.out;
  if (d.has("sat") && t == Type::S32) {
    if (!d.operands(3)) return false;
    out.d[0] = d.dst(0), out.a = d.src(1, t), out.b = d.src(2, t);
    out.run = op == "add" ? &ops::saturating_s32<false> : &ops::saturating_s32<true>;
    return true;
  }
  if (d.has("cc")) {
    if (!d.operands(3)) return false;
    out.d[0] = d.dst(0), out.a = d.src(1, t), out.b = d.src(2, t);
    if (type_size(t) == 8)
      out.run =
          op == "add" ? &ops::carry_op<uint64_t, false, false, true> : &ops::carry_op<uint64_t, true, false, true>;
    else
      out.run =
          op == "add" ? &ops::carry_op<uint32_t, false, false, true> : &ops::carry_op<uint32_t, true, false, true>;
    return true;
  }
  return op == "add" ? arithmetic<ops::Add, true, true>(d, t) : arithmetic<ops::Sub, true, true>(d, t);
}

bool decode_with_carry(Decoding &d, const std::string &op) {
  const Type t = d.type();
  Instruction &out = d.out;
  if (!d.operands(3)) return false;
  out.d[0] = d.dst(0), out.a = d.src(1, t), out.b = d.src(2, t);
  const bool set = d.has("cc"), wide = type_size(t) == 8, sub = op == "subc";
  if (wide)
    out.run = sub ? (set ? &ops::carry_op<uint64_t, true, true, true> : &ops::carry_op<uint64_t, true, true, false>)
                  : (set ? &ops::carry_op<uint64_t, false, true, true> : &ops::carry_op<uint64_t, false, true, false>);
  else
    out.run = sub ? (set ? &ops::carry_op<uint32_t, true, true, true> : &ops::carry_op<uint32_t, true, true, false>)
                  : (set ? &ops::carry_op<uint32_t, false, true, true> : &ops::carry_op<uint32_t, false, true, false>);
  return true;
}

template <typename Op>
bool decode_shift(Decoding &d) {
  const Type t = d.type();
  if (!d.operands(3)) return false;
  d.out.d[0] = d.dst(0), d.out.a = d.src(1, t), d.out.b = d.src(2, Type::U32);
  d.out.run = by_type(t, [&](auto tag) -> Handler {
    using T = decltype(tag);
    if constexpr (kInteger<T>) return &ops::shift<T, Op>;
    else return nullptr;
  });
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_unary_bits(Decoding &d, const std::string &op) {
  const Type t = d.type();
  if (op == "not" && t == Type::Pred) {
    if (!d.operands(2)) return false;
    d.out.d[0] = d.dst(0), d.out.a = d.src(1, t);
    d.out.run = &ops::unary<uint8_t, ops::NotPredicate>;
    return true;
  }
  if (op == "not") return one_operand<ops::Not, true, false>(d, t);
  if (op == "cnot") return one_operand<ops::CNot, true, false>(d, t);
  if (!d.operands(2)) return false;
  d.out.d[0] = d.dst(0), d.out.a = d.src(1, t);
  const bool wide = type_size(t) == 8;
  if (op == "popc") d.out.run = wide ? &ops::unary<uint64_t, ops::Popc> : &ops::unary<uint32_t, ops::Popc>;
  else if (op == "clz") d.out.run = wide ? &ops::unary<uint64_t, ops::Clz> : &ops::unary<uint32_t, ops::Clz>;
  else d.out.run = wide ? &ops::unary<uint64_t, ops::Brev> : &ops::unary<uint32_t, ops::Brev>;
  return true;
}

bool decode_select(Decoding &d, const std::string &op) {
  const Type t = d.type();
  if (!d.operands(op == "testp" ? 2 : 4)) return false;
  d.out.d[0] = d.dst(0), d.out.a = d.src(1, t);
  if (op == "testp") {
    static const char *const kTests[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};
    for (uint8_t i = 0; i < 6; ++i)
      if (d.has(kTests[i])) d.out.mode = i;
    d.out.run = t == Type::F64 ? &ops::testp<double> : &ops::testp<float>;
    return true;
  }
  d.out.b = d.src(2, t);
  if (op == "selp") {
    d.out.c = d.src(3, Type::Pred);
    d.out.run = by_type(t, [&](auto tag) -> Handler { return &ops::selp<decltype(tag)>; });
  } else {  // slct
    const Type c = d.type(1);
    d.out.c = d.src(3, c);
    d.out.run = by_type(t, [&](auto tag) -> Handler {
      using T = decltype(tag);
      return c == Type::F32 ? &ops::slct<T, float> : &ops::slct<T, int32_t>;
    });
  }
  return d.out.run != nullptr || d.refuse("type");
}

bool decode_cvta(Decoding &d) {
  if (!d.operands(2)) return false;
  bool named = false;
  d.out.space = static_cast<uint8_t>(space_named(d, named));
  d.out.mode = d.has("to") ? 1 : 0;
  d.out.d[0] = d.dst(0), d.out.a = d.src(1, d.type());
  d.out.run = &ops::cvta;
  return true;
}

// Hints and orderings with nothing to do here; createpolicy's result is a hint nothing reads.
bool decode_hint(Decoding &d, const std::string &op) {
  d.out.run = &ops::nothing;
  if (op == "createpolicy") {
    if (!d.operands(1)) return false;
    d.out.d[0] = d.dst(0);
    d.out.run = &ops::activemask;
  }
  return true;
}

bool decode_control(Decoding &d, const std::string &op) {
  d.out.run = &ops::nothing;
  if (op == "bra") {
    if (!d.operands(1)) return false;
    d.out.control = Control::Branch;
    d.scope.branch_to(d.s.operands[0].text, d.index);
    return true;
  }
  if (op == "call") return decode_call(d);
  if (op == "ret") d.out.control = d.scope.in_kernel() ? Control::Exit : Control::Return;
  else if (op == "exit") d.out.control = Control::Exit;
  else d.out.control = Control::Trap;
  return true;
}

using OpcodeDecoder = bool (*)(Decoding &d, const std::string &op);

OpcodeDecoder decoder_for(const std::string &op) {
  static const std::map<std::string, OpcodeDecoder> kDecoders = [] {
    std::map<std::string, OpcodeDecoder> m;
    m["add"] = m["sub"] = &decode_add_sub;
    m["addc"] = m["subc"] = &decode_with_carry;
    m["mul"] = [](Decoding &d, const std::string &) { return multiply(d, false); };
    m["mad"] = [](Decoding &d, const std::string &) { return multiply(d, true); };
    m["fma"] = [](Decoding &d, const std::string &) { return three_operands<ops::Fma, false, true>(d, d.type()); };
    m["div"] = [](Decoding &d, const std::string &) { return arithmetic<ops::Div, true, true>(d, d.type()); };
    m["rem"] = [](Decoding &d, const std::string &) { return integer_only<ops::Rem>(d, d.type()); };
    m["min"] = [](Decoding &d, const std::string &) { return arithmetic<ops::Min, true, true>(d, d.type()); };
    m["max"] = [](Decoding &d, const std::string &) { return arithmetic<ops::Max, true, true>(d, d.type()); };
    m["and"] = [](Decoding &d, const std::string &) { return integer_only<ops::And>(d, d.type()); };
    m["or"] = [](Decoding &d, const std::string &) { return integer_only<ops::Or>(d, d.type()); };
    m["xor"] = [](Decoding &d, const std::string &) { return integer_only<ops::Xor>(d, d.type()); };
    m["shl"] = [](Decoding &d, const std::string &) { return decode_shift<ops::Shl>(d); };
    m["shr"] = [](Decoding &d, const std::string &) { return decode_shift<ops::Shr>(d); };
    m["not"] = m["cnot"] = m["popc"] = m["clz"] = m["brev"] = &decode_unary_bits;
    m["neg"] = [](Decoding &d, const std::string &) { return one_operand<ops::Neg, true, true>(d, d.type()); };
    m["abs"] = [](Decoding &d, const std::string &) { return one_operand<ops::Abs, true, true>(d, d.type()); };
    m["copysign"] = [](Decoding &d, const std::string &) {
      return arithmetic<ops::CopySign, false, true>(d, d.type());
    };
    for (const char *math : {"rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "tanh"}) m[math] = &decode_math;
    for (const char *bits : {"bfe", "bfi", "bfind", "prmt", "lop3", "shf", "sad"}) m[bits] = &decode_bits;
    m["setp"] = [](Decoding &d, const std::string &) { return decode_setp(d, false); };
    m["set"] = [](Decoding &d, const std::string &) { return decode_setp(d, true); };
    m["selp"] = m["slct"] = m["testp"] = &decode_select;
    m["mov"] = [](Decoding &d, const std::string &) { return decode_mov(d); };
    m["cvt"] = [](Decoding &d, const std::string &) { return decode_cvt(d); };
    m["cvta"] = [](Decoding &d, const std::string &) { return decode_cvta(d); };
    m["ld"] = m["ldu"] = [](Decoding &d, const std::string &) { return decode_load(d); };
    m["st"] = [](Decoding &d, const std::string &) { return decode_store(d); };
    m["atom"] = [](Decoding &d, const std::string &) { return decode_atomic(d, false); };
    m["red"] = [](Decoding &d, const std::string &) { return decode_atomic(d, true); };
    for (const char *warp : {"shfl", "vote", "activemask", "match", "redux"}) m[warp] = &decode_warp;
    m["bar"] = m["barrier"] = &decode_barrier;
    for (const char *hint :
         {"membar", "fence", "prefetch", "prefetchu", "nanosleep", "brkpt", "discard", "applypriority", "createpolicy"})
      m[hint] = &decode_hint;
    for (const char *control : {"bra", "call", "ret", "exit", "trap"}) m[control] = &decode_control;
    return m;
  }();
  const auto found = kDecoders.find(op);
  return found == kDecoders.end() ? nullptr : found->second;
}

}  // namespace

bool decode_instruction(const Statement &s, FunctionScope &scope, uint32_t index, Instruction &out,
                        std::string &refusal, std::string &error) {
  Decoding d{s, scope, out, refusal, error, index, {}, {}};
  const std::string &op = s.opcode[0];
  for (size_t i = 1; i < s.opcode.size(); ++i) {
    const Type t = type_named(s.opcode[i]);
    if (t != Type::None) d.types.push_back(t);
    else d.modifiers.insert(s.opcode[i]);
  }
  out.line = s.line;
  out.text = s.text;
  if (!s.guard.empty()) {
    Operand guard;
    guard.text = s.guard;
    out.guard = scope.source(guard, Type::Pred, error);
    out.guard_negated = s.guard_negated;
  }
  if (const char *what = unsupported(op); what != nullptr) return d.refuse(what);
  for (const Type t : d.types)
    if ((t == Type::F16 || t == Type::F16x2 || t == Type::BF16) && op != "cvt" && op != "ld" && op != "st" &&
        op != "mov")
      return d.refuse("half-precision arithmetic");
  const OpcodeDecoder decoder = decoder_for(op);
  return decoder != nullptr ? decoder(d, op) : d.refuse(op);
}

}  // namespace leaseguard::sim::ptx
