// How to step from one x86-64 frame to its caller, read from the code's DWARF call frame
// information (.eh_frame) and cached per instruction address.
//
// Why not frame pointers alone: in code built without them, %rbp is an ordinary register,
// and a frame-pointer walk silently skips frames (or follows garbage). Why not the C++
// runtime's unwinder for every frame: it parses the CFI again at each step, ~100 ns a frame.
// The call frame information is right with or without frame pointers, and the rule it gives
// for one address never changes while its module is loaded, so it is parsed once per
// address and afterwards an unwinding step is a cache lookup and two loads.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace leaseguard {

struct FrameRule {
  enum class Cfa : uint8_t {
    Unknown = 0,    // no usable rule: the caller falls back to the full DWARF unwinder
    StackPointer,   // CFA = %rsp + cfa_offset
    FramePointer,   // CFA = %rbp + cfa_offset
    Outermost,      // the return address is undefined: the stack ends here
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

namespace detail {

// A direct-mapped cache of rules. Each entry is guarded by a sequence number: odd while a
// writer fills it, and a reader that sees it change takes the lookup as a miss. Entries are
// written only by a thread that wins the entry's sequence number, so no reader sees a torn
// rule. The entry's fields are stored with release and loaded with acquire (plain moves on
// x86-64), which orders the reader's second look at the sequence after them without a fence
// (fences are also what ThreadSanitizer cannot follow).
struct alignas(32) RuleCacheEntry {
  std::atomic<uint32_t> sequence{0};
  std::atomic<uint64_t> pc{0};
  std::atomic<uint64_t> packed{0};
};
inline constexpr unsigned kRuleCacheBits = 13;
extern RuleCacheEntry g_rule_cache[size_t{1} << kRuleCacheBits];

FrameRule frame_rule_on_miss(uintptr_t pc, RuleCacheEntry &entry, uint32_t sequence) noexcept;

}  // namespace detail

// A rule as the cache holds it: one word, read field by field. A stack walk decodes it with
// shifts instead of rebuilding the struct, which took a third of each step's instructions.
class PackedFrameRule {
 public:
  explicit PackedFrameRule(uint64_t word) noexcept : word_(word) {}
  explicit PackedFrameRule(FrameRule rule) noexcept : word_(std::bit_cast<uint64_t>(rule)) {}
  FrameRule::Cfa cfa() const noexcept { return static_cast<FrameRule::Cfa>(word_ >> 48 & 0xff); }
  int32_t cfa_offset() const noexcept { return static_cast<int32_t>(word_); }
  bool rbp_saved() const noexcept { return (word_ >> 56) != 0; }
  int16_t rbp_offset() const noexcept { return static_cast<int16_t>(word_ >> 32); }

 private:
  uint64_t word_;
};
static_assert(std::bit_cast<uint64_t>(FrameRule{-8, -16, FrameRule::Cfa::FramePointer, true}) ==
                  0x0102'fff0'ffff'fff8ull,
              "PackedFrameRule reads FrameRule's little-endian layout");

// The same, through a process-wide lock-free cache. Inline: a stack walk asks once a frame.
inline PackedFrameRule cached_frame_rule_at(uintptr_t pc) noexcept {
  detail::RuleCacheEntry &entry = detail::g_rule_cache[(pc * 0x9E3779B97F4A7C15ull) >> (64 - detail::kRuleCacheBits)];
  const uint32_t before = entry.sequence.load(std::memory_order_acquire);
  if ((before & 1) == 0 && entry.pc.load(std::memory_order_acquire) == pc) {
    const uint64_t packed = entry.packed.load(std::memory_order_acquire);
    if (entry.sequence.load(std::memory_order_acquire) == before) return PackedFrameRule(packed);
  }
  return PackedFrameRule(detail::frame_rule_on_miss(pc, entry, before));
}

}  // namespace leaseguard
