// How to step from one x86-64 frame to its caller, read from the code's DWARF call frame
// information (.eh_frame) and cached per instruction address.
//
// Why not frame pointers alone: in code built without them, %rbp is an ordinary register,
// and a frame-pointer walk silently skips frames (or follows garbage). Why not the C++
// runtime's unwinder for every frame: it parses the CFI again at each step, ~100 ns a frame.
// The call frame information is right with or without frame pointers, and the rule it gives
// for one address never changes while its module is loaded, so it is parsed once per
// address and afterwards an unwinding step is a cache lookup (one load) and two loads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace leaseguard {

struct FrameRule {
  enum class Cfa : uint8_t {
    Unknown = 0,   // no usable rule: the caller falls back to the full DWARF unwinder
    StackPointer,  // CFA = %rsp + cfa_offset
    FramePointer,  // CFA = %rbp + cfa_offset
    Outermost,     // the return address is undefined: the stack ends here
  };
  int32_t cfa_offset = 0;
  int16_t rbp_offset = 0;  // with rbp_saved: the caller's %rbp is at CFA + rbp_offset
  Cfa cfa = Cfa::Unknown;
  bool rbp_saved = false;  // else %rbp is unchanged in the caller
  // The return address is at CFA - 8 (checked when the rule is made; anything else is Unknown).
};
static_assert(sizeof(FrameRule) == 8, "a rule is cached in one 64-bit word");

// The rule in effect at `pc`. For a return address, pass the address of the call
// instruction (return address - 1), as the unwinders do.
FrameRule frame_rule_at(uintptr_t pc) noexcept;

// A rule as the rule cache holds it: one 64-bit word that carries the address it is for and
// the rule, so that a lookup is one load and one comparison, with no lock or sequence number
// around it (a word is stored and loaded whole). From the top:
//   bits 63..30  the tag: pc >> kRuleCacheBits (an address below 2^48 fits; the cache
//                index, the rest of the address, is where the word is)
//   bits 29..28  the Cfa kind
//   bit  27      rbp_saved
//   bits 26..20  rbp_offset / 8, signed
//   bits 19..0   cfa_offset, signed (within 512 KiB)
// A rule whose offsets do not fit is cached as Unknown: such a frame (a function with half a
// megabyte of locals) is left to the full unwinder, which is always right.
class PackedFrameRule {
 public:
  static constexpr unsigned kTagShift = 30;
  constexpr explicit PackedFrameRule(uint64_t word) noexcept : word_(word) {}
  // `rule` under the tag `tag` (0: none).
  static constexpr PackedFrameRule pack(uint64_t tag, FrameRule rule) noexcept {
    const bool fits = rule.cfa_offset >= -(1 << 19) && rule.cfa_offset < (1 << 19) && rule.rbp_offset % 8 == 0 &&
                      rule.rbp_offset >= -512 && rule.rbp_offset < 512;
    const FrameRule::Cfa cfa = fits ? rule.cfa : FrameRule::Cfa::Unknown;
    const uint64_t body = cfa == FrameRule::Cfa::Unknown
                              ? 0
                              : uint64_t{rule.rbp_saved} << 27 |
                                    (static_cast<uint64_t>(rule.rbp_offset / 8) & 0x7f) << 20 |
                                    (static_cast<uint64_t>(rule.cfa_offset) & 0xfffff);
    return PackedFrameRule(tag << kTagShift | static_cast<uint64_t>(cfa) << 28 | body);
  }
  constexpr uint64_t word() const noexcept { return word_; }
  // The rule at every call in a function built with frame pointers: CFA = %rbp + 16, the
  // caller's %rbp saved at CFA - 16. Most frames of most programs; a walk steps them
  // without decoding the rule.
  bool is_frame_pointer_frame() const noexcept { return (word_ & kRuleBits) == kFramePointerFrame; }
  // CFA = %rsp + cfa_offset with %rbp left as it is: most frames of code built without frame
  // pointers; a walk steps them without decoding the rest of the rule.
  bool is_stack_pointer_frame() const noexcept { return (word_ >> 27 & 7) == kStackPointerKeepingRbp; }
  uint64_t tag() const noexcept { return word_ >> kTagShift; }
  FrameRule::Cfa cfa() const noexcept { return static_cast<FrameRule::Cfa>(word_ >> 28 & 3); }
  int32_t cfa_offset() const noexcept { return static_cast<int32_t>(static_cast<int64_t>(word_ << 44) >> 44); }
  bool rbp_saved() const noexcept { return (word_ >> 27 & 1) != 0; }
  int32_t rbp_offset() const noexcept { return static_cast<int32_t>(static_cast<int64_t>(word_ << 37) >> 57) * 8; }

 private:
  static constexpr uint64_t kRuleBits = (uint64_t{1} << kTagShift) - 1;
  static const uint64_t kFramePointerFrame;
  static constexpr uint64_t kStackPointerKeepingRbp = static_cast<uint64_t>(FrameRule::Cfa::StackPointer)
                                                      << 1;  // bits 29..27
  uint64_t word_;
};
inline constexpr uint64_t PackedFrameRule::kFramePointerFrame =
    PackedFrameRule::pack(0, FrameRule{16, -16, FrameRule::Cfa::FramePointer, true}).word();

namespace detail {

// A direct-mapped cache of packed rules, process-wide. An empty entry is 0, which no tag
// matches (no code lies in the first pages). Racing writers of one entry each store a whole
// word, so a reader sees one of them or the old word, each of which names its own address.
inline constexpr unsigned kRuleCacheBits = 14;
extern std::atomic<uint64_t> g_rule_cache[size_t{1} << kRuleCacheBits];

// Where `pc`'s rule is cached: the address's low bits mixed with the next ones, so that
// call sites a multiple of 16 KiB apart do not share an entry; the tag is the rest.
inline size_t rule_cache_index(uintptr_t pc) noexcept {
  return (pc ^ pc >> kRuleCacheBits) & ((size_t{1} << kRuleCacheBits) - 1);
}

PackedFrameRule frame_rule_on_miss(uintptr_t pc) noexcept;

}  // namespace detail

// The rule in effect at `pc`, through the cache. Inline: a stack walk asks once a frame.
inline PackedFrameRule cached_frame_rule_at(uintptr_t pc) noexcept {
  const PackedFrameRule cached(detail::g_rule_cache[detail::rule_cache_index(pc)].load(std::memory_order_relaxed));
  if (cached.tag() == pc >> detail::kRuleCacheBits) return cached;
  return detail::frame_rule_on_miss(pc);
}

}  // namespace leaseguard
