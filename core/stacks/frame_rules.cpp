// Reads the frame rule at an address from .eh_frame (see frame_rules.h).
//
// The C++ runtime finds the frame description entry (FDE) that covers an address; this file
// runs the entry's call frame instructions up to the address, keeping only what a stack
// walk needs: how the CFA is computed, and where the caller's %rbp was saved. Anything
// unusual (a CFA given by an expression, a signal frame, a 64-bit length) yields Unknown,
// and the caller falls back to the full unwinder, so a rule is either exact or absent.
#include "frame_rules.h"

#include <cstring>

#include "code_generation.h"

extern "C" {
// From the C++ runtime's unwinder (libgcc_s), the function _Unwind_Backtrace uses itself.
struct lg_dwarf_eh_bases {
  void *tbase;
  void *dbase;
  void *func;
};
const void *_Unwind_Find_FDE(void *pc, struct lg_dwarf_eh_bases *bases);
}

namespace leaseguard {
namespace {

constexpr unsigned kRegRbp = 6;
constexpr unsigned kRegRsp = 7;
constexpr unsigned kRegReturnAddress = 16;

class Reader {
 public:
  Reader(const uint8_t *at, const uint8_t *end) : at_(at), end_(end) {}
  bool ok() const { return ok_; }
  bool more() const { return ok_ && at_ < end_; }
  const uint8_t *position() const { return at_; }
  uint8_t u8() { return ok_ && at_ < end_ ? *at_++ : fail(); }
  uint64_t fixed(size_t bytes) {
    if (!ok_ || static_cast<size_t>(end_ - at_) < bytes) return fail();
    uint64_t value = 0;
    std::memcpy(&value, at_, bytes);  // little-endian
    at_ += bytes;
    return value;
  }
  uint64_t uleb() {
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      uint8_t byte = u8();
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return fail();
  }
  int64_t sleb() {
    int64_t value = 0;
    unsigned shift = 0;
    uint8_t byte = 0;
    do {
      byte = u8();
      value |= static_cast<int64_t>(uint64_t{byte & 0x7fu} << shift);
      shift += 7;
    } while ((byte & 0x80) != 0 && shift < 64 && ok_);
    if (shift < 64 && (byte & 0x40) != 0) value |= -(int64_t{1} << shift);
    return value;
  }
  void skip(uint64_t bytes) {
    if (!ok_ || static_cast<uint64_t>(end_ - at_) < bytes) fail();
    else at_ += bytes;
  }
  // Skips a pointer in DW_EH_PE encoding `encoding`; its value is never needed here.
  void skip_encoded(uint8_t encoding) {
    if (encoding == 0xff) return;  // DW_EH_PE_omit
    switch (encoding & 0x0f) {
      case 0x00:
      case 0x04:
      case 0x0c: skip(8); break;  // absptr, udata8, sdata8
      case 0x02:
      case 0x0a: skip(2); break;  // udata2, sdata2
      case 0x03:
      case 0x0b: skip(4); break;  // udata4, sdata4
      case 0x01: uleb(); break;
      case 0x09: sleb(); break;
      default: fail();
    }
  }
  uint8_t fail() {
    ok_ = false;
    return 0;
  }

 private:
  const uint8_t *at_;
  const uint8_t *end_;
  bool ok_ = true;
};

struct RowState {
  unsigned cfa_register = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  bool rbp_saved = false;
  int64_t rbp_offset = 0;
  bool rbp_unusual = false;  // kept in another register, or by an expression
  int64_t return_offset = -8;
  bool return_undefined = false;
  bool return_unusual = false;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  const uint8_t *instructions = nullptr;
  const uint8_t *end = nullptr;
};

// A record's bounds: after its 32-bit length. 64-bit lengths do not occur in .eh_frame of
// code this size and are refused.
bool record_bounds(const uint8_t *record, const uint8_t *&body, const uint8_t *&end) {
  uint32_t length;
  std::memcpy(&length, record, sizeof length);
  if (length == 0 || length == 0xffffffffu) return false;
  body = record + 4;
  end = body + length;
  return true;
}

bool parse_cie(const uint8_t *record, Cie &cie) {
  const uint8_t *body;
  const uint8_t *end;
  if (!record_bounds(record, body, end)) return false;
  Reader in(body, end);
  if (in.fixed(4) != 0) return false;  // a CIE's id is 0 in .eh_frame
  uint8_t version = in.u8();
  if (version != 1 && version != 3) return false;
  char augmentation[8];
  size_t length = 0;
  for (char c = static_cast<char>(in.u8()); c != '\0' && in.ok(); c = static_cast<char>(in.u8())) {
    if (length + 1 == sizeof augmentation) return false;
    augmentation[length++] = c;
  }
  augmentation[length] = '\0';
  cie.code_align = in.uleb();
  cie.data_align = in.sleb();
  uint64_t return_register = version == 1 ? in.u8() : in.uleb();
  if (return_register != kRegReturnAddress) return false;
  if (augmentation[0] == 'z') {
    cie.has_augmentation_data = true;
    uint64_t data_bytes = in.uleb();
    const uint8_t *data_end = in.position() + data_bytes;
    for (size_t i = 1; i < length && in.ok(); ++i) {
      switch (augmentation[i]) {
        case 'R': cie.fde_encoding = in.u8(); break;
        case 'P': in.skip_encoded(in.u8()); break;
        case 'L': in.u8(); break;
        default: return false;  // 'S' (a signal frame) and anything newer: not ours to step
      }
    }
    if (!in.ok() || in.position() > data_end) return false;
    in.skip(static_cast<uint64_t>(data_end - in.position()));
  } else if (length != 0) {
    return false;
  }
  cie.instructions = in.position();
  cie.end = end;
  return in.ok();
}

// Runs call frame instructions while the row's address is at most `target`, keeping in `row`
// only what a frame rule needs (the CFA, and where rbp and the return address are).
class Instructions {
 public:
  Instructions(Reader in, const Cie &cie, uintptr_t location, uintptr_t target, RowState &row, const RowState &initial)
      : in_(in), cie_(cie), location_(location), target_(target), row_(row), initial_(initial) {}

  // False on anything it does not model.
  bool run() {
    while (in_.more()) {
      switch (step(in_.u8())) {
        case Step::Next: break;
        case Step::Done: return true;
        case Step::Unmodelled: return false;
      }
      if (!in_.ok()) return false;
    }
    return in_.ok();
  }

 private:
  enum class Step { Next, Done, Unmodelled };

  Step step(uint8_t op) {
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40: return advance(low);  // advance_loc
      case 0x80:                       // offset
        set_register(low, static_cast<int64_t>(in_.uleb()) * cie_.data_align);
        return Step::Next;
      case 0xc0:  // restore
        restore_register(low);
        return Step::Next;
      default: break;
    }
    switch (op) {
      case 0x00: return Step::Next;              // nop
      case 0x02: return advance(in_.u8());       // advance_loc1
      case 0x03: return advance(in_.fixed(2));   // advance_loc2
      case 0x04: return advance(in_.fixed(4));   // advance_loc4
      case 0x0a: return remember();              // remember_state
      case 0x0b: return restore();               // restore_state
      case 0x2e: in_.uleb(); return Step::Next;  // GNU_args_size
      default: break;
    }
    if (cfa_rule(op) || register_rule(op)) return Step::Next;
    return Step::Unmodelled;  // set_loc and vendor extensions
  }

  Step advance(uint64_t delta) {
    location_ += delta * cie_.code_align;
    return location_ <= target_ ? Step::Next : Step::Done;
  }

  Step remember() {
    if (remembered_count_ == kRemembered) return Step::Unmodelled;
    remembered_[remembered_count_++] = row_;
    return Step::Next;
  }

  // The whole row, CFA rule included (as GCC emits and reads it).
  Step restore() {
    if (remembered_count_ == 0) return Step::Unmodelled;
    row_ = remembered_[--remembered_count_];
    return Step::Next;
  }

  // The def_cfa instructions; false if `op` is none of them.
  bool cfa_rule(uint8_t op) {
    switch (op) {
      case 0x0c:  // def_cfa
        row_.cfa_register = static_cast<unsigned>(in_.uleb());
        row_.cfa_offset = static_cast<int64_t>(in_.uleb());
        row_.cfa_expression = false;
        return true;
      case 0x0d:  // def_cfa_register
        row_.cfa_register = static_cast<unsigned>(in_.uleb());
        row_.cfa_expression = false;
        return true;
      case 0x0e:  // def_cfa_offset
        row_.cfa_offset = static_cast<int64_t>(in_.uleb());
        return true;
      case 0x0f:  // def_cfa_expression
        row_.cfa_expression = true;
        in_.skip(in_.uleb());
        return true;
      case 0x12:  // def_cfa_sf
        row_.cfa_register = static_cast<unsigned>(in_.uleb());
        row_.cfa_offset = in_.sleb() * cie_.data_align;
        row_.cfa_expression = false;
        return true;
      case 0x13:  // def_cfa_offset_sf
        row_.cfa_offset = in_.sleb() * cie_.data_align;
        return true;
      default: return false;
    }
  }

  // The instructions that say where a register is; false if `op` is none of them.
  bool register_rule(uint8_t op) {
    switch (op) {
      case 0x05: {  // offset_extended
        const uint64_t reg = in_.uleb();
        set_register(reg, static_cast<int64_t>(in_.uleb()) * cie_.data_align);
        return true;
      }
      case 0x06: restore_register(in_.uleb()); return true;  // restore_extended
      case 0x07: {                                           // undefined
        const uint64_t reg = in_.uleb();
        if (reg == kRegReturnAddress) row_.return_undefined = true;
        else if (reg == kRegRbp) row_.rbp_unusual = true;
        return true;
      }
      case 0x08: {  // same_value
        const uint64_t reg = in_.uleb();
        if (reg == kRegRbp) row_.rbp_saved = false;
        else if (reg == kRegReturnAddress) row_.return_unusual = true;
        return true;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = in_.uleb();
        set_register(reg, in_.sleb() * cie_.data_align);
        return true;
      }
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = in_.uleb();
        set_register(reg, -static_cast<int64_t>(in_.uleb()) * cie_.data_align);
        return true;
      }
      default: return unusual_rule(op);
    }
  }

  // The instructions that put a register somewhere a frame rule does not follow (another
  // register, an expression, a value); false if `op` is none of them.
  bool unusual_rule(uint8_t op) {
    switch (op) {
      case 0x09: {  // register
        const uint64_t reg = in_.uleb();
        in_.uleb();
        unusual_register(reg);
        return true;
      }
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const uint64_t reg = in_.uleb();
        in_.skip(in_.uleb());
        unusual_register(reg);
        return true;
      }
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = in_.uleb();
        if (op == 0x14) in_.uleb();
        else in_.sleb();
        unusual_register(reg);
        return true;
      }
      default: return false;
    }
  }

  void set_register(uint64_t reg, int64_t offset) {
    if (reg == kRegRbp) {
      row_.rbp_saved = true;
      row_.rbp_offset = offset;
      row_.rbp_unusual = false;
    } else if (reg == kRegReturnAddress) {
      row_.return_offset = offset;
      row_.return_undefined = false;
      row_.return_unusual = false;
    }
  }

  void restore_register(uint64_t reg) {
    if (reg == kRegRbp) {
      row_.rbp_saved = initial_.rbp_saved;
      row_.rbp_offset = initial_.rbp_offset;
      row_.rbp_unusual = initial_.rbp_unusual;
    } else if (reg == kRegReturnAddress) {
      row_.return_offset = initial_.return_offset;
      row_.return_undefined = initial_.return_undefined;
      row_.return_unusual = initial_.return_unusual;
    }
  }

  void unusual_register(uint64_t reg) {
    if (reg == kRegRbp) row_.rbp_unusual = true;
    if (reg == kRegReturnAddress) row_.return_unusual = true;
  }

  static constexpr int kRemembered = 8;
  Reader in_;
  const Cie &cie_;
  uintptr_t location_;
  const uintptr_t target_;
  RowState &row_;
  const RowState &initial_;
  RowState remembered_[kRemembered];
  int remembered_count_ = 0;
};

bool run_instructions(Reader in, const Cie &cie, uintptr_t location, uintptr_t target, RowState &row,
                      const RowState &initial) {
  return Instructions(in, cie, location, target, row, initial).run();
}

FrameRule rule_of(const RowState &row) {
  FrameRule rule;
  if (row.return_undefined) {
    rule.cfa = FrameRule::Cfa::Outermost;
    return rule;
  }
  if (row.cfa_expression || row.return_unusual || row.rbp_unusual || row.return_offset != -8) return rule;
  if (row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX || row.rbp_offset < INT16_MIN ||
      row.rbp_offset > INT16_MAX)
    return rule;
  if (row.cfa_register == kRegRsp) rule.cfa = FrameRule::Cfa::StackPointer;
  else if (row.cfa_register == kRegRbp) rule.cfa = FrameRule::Cfa::FramePointer;
  else return rule;  // a CFA in another register (realigned stacks): the full unwinder knows
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  rule.rbp_saved = row.rbp_saved;
  rule.rbp_offset = static_cast<int16_t>(row.rbp_offset);
  return rule;
}

}  // namespace

FrameRule frame_rule_at(uintptr_t pc) noexcept {
  lg_dwarf_eh_bases bases{};
  const auto *fde = static_cast<const uint8_t *>(_Unwind_Find_FDE(reinterpret_cast<void *>(pc), &bases));
  if (fde == nullptr || bases.func == nullptr) return FrameRule{};
  const uint8_t *body;
  const uint8_t *end;
  if (!record_bounds(fde, body, end)) return FrameRule{};
  uint32_t cie_pointer;
  std::memcpy(&cie_pointer, body, sizeof cie_pointer);
  Cie cie;
  if (cie_pointer == 0 || !parse_cie(body - cie_pointer, cie)) return FrameRule{};
  Reader in(body + 4, end);
  in.skip_encoded(cie.fde_encoding & 0x0f);  // pc_begin (bases.func says where it points)
  in.skip_encoded(cie.fde_encoding & 0x0f);  // pc_range
  if (cie.has_augmentation_data) in.skip(in.uleb());
  if (!in.ok()) return FrameRule{};

  const auto function = reinterpret_cast<uintptr_t>(bases.func);
  RowState row;
  RowState never_restored;
  if (!run_instructions(Reader(cie.instructions, cie.end), cie, function, UINTPTR_MAX, row, never_restored))
    return FrameRule{};
  const RowState initial = row;
  if (!run_instructions(in, cie, function, pc, row, initial)) return FrameRule{};
  return rule_of(row);
}

namespace detail {

std::atomic<uint64_t> g_rule_cache[size_t{1} << kRuleCacheBits];
std::atomic<uint64_t> g_code_generation{0};

PackedFrameRule frame_rule_on_miss(uintptr_t pc) noexcept {
  const uint64_t tag = pc >> kRuleCacheBits;
  const PackedFrameRule rule = PackedFrameRule::pack(tag, frame_rule_at(pc));
  // An address too high for the tag (not in today's user address spaces) is not cached.
  if (rule.tag() == tag) g_rule_cache[rule_cache_index(pc)].store(rule.word(), std::memory_order_relaxed);
  return rule;
}

}  // namespace detail

void note_code_unloaded() noexcept {
  // A walk of code that is loaded now may store a rule into an entry just emptied; that rule
  // is right.
  for (std::atomic<uint64_t> &entry : detail::g_rule_cache) entry.store(0, std::memory_order_relaxed);
  detail::g_code_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace leaseguard
