// The cached stack walk against the C++ runtime's unwinder: the same frames, in code built
// with frame pointers and without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "code_generation.h"
#include "frame_rules.h"
#include "stack_capture.h"
#include "stack_chain.h"

namespace leaseguard {
namespace {

struct Captures {
  std::vector<uintptr_t> fast;
  std::vector<uintptr_t> reference;
  bool walked = false;  // the cached walk went all the way, without the unwinder
};

// Room for every frame down to the outermost: the two walks are compared from there, which
// lines them up only if neither was cut short (a 30-deep chain takes two frames a level
// where the compiler does not inline its helpers, and gtest adds ~20).
constexpr size_t kRoom = 128;

size_t capture_both(void *argument) {
  auto *captures = static_cast<Captures *>(argument);
  ExcludedCode none;
  captures->fast.resize(kRoom);
  captures->reference.resize(kRoom);
  size_t count = 0;
  captures->walked = capture_stack_cached(captures->fast.data(), kRoom, none, count) == WalkResult::Done;
  captures->fast.resize(count);
  captures->reference.resize(capture_stack_unwinder(captures->reference.data(), kRoom, none));
  return captures->fast.size();
}

// The first frames differ (each capture is called from its own place in capture_both, and
// the unwinder's own frame is one more); from capture_both's caller to the outermost frame
// both must list the same return addresses.
void expect_same_callers(const Captures &captures, size_t at_least = 20) {
  EXPECT_TRUE(captures.walked);
  ASSERT_GE(captures.fast.size(), at_least);
  ASSERT_GE(captures.reference.size(), at_least);
  ASSERT_LT(captures.reference.size(), kRoom) << "the walks did not reach the outermost frame";
  size_t common = 0;
  while (common < captures.fast.size() && common < captures.reference.size() &&
         captures.fast.rbegin()[common] == captures.reference.rbegin()[common])
    ++common;
  EXPECT_GE(common + 3, std::min(captures.fast.size(), captures.reference.size()))
      << "the walks part " << common << " frames below the outermost; fast " << captures.fast.size()
      << " frames, unwinder " << captures.reference.size();
}

// What a hook does: the walk starts at its caller, read from its own frame. It must list
// exactly the frames the unwinder lists from that return address on.
__attribute__((noinline)) size_t capture_from_the_caller(void *argument) {
  auto *captures = static_cast<Captures *>(argument);
  const WalkStart start = walk_start_above(__builtin_frame_address(0));
  ExcludedCode none;
  captures->fast.resize(128);
  captures->reference.resize(128);
  size_t count = 0;
  captures->walked = capture_stack_cached(captures->fast.data(), 128, none, count, start) == WalkResult::Done;
  captures->fast.resize(count);
  captures->reference.resize(capture_stack_unwinder(captures->reference.data(), 128, none));
  EXPECT_EQ(captures->fast.at(0), start.pc);
  __asm__ volatile("" ::: "memory");
  return count;
}

void expect_walk_from_the_caller_is_the_unwinders(const Captures &captures) {
  EXPECT_TRUE(captures.walked);
  ASSERT_GE(captures.fast.size(), 20u);
  auto first = std::find(captures.reference.begin(), captures.reference.end(), captures.fast[0]);
  ASSERT_NE(first, captures.reference.end()) << "the caller's return address is not on the unwinder's stack";
  EXPECT_EQ(captures.fast, std::vector<uintptr_t>(first, captures.reference.end()));
}

__attribute__((noinline)) size_t fp_chain(const testing::ChainCall &call, int depth) {
  size_t result = depth <= 0 ? call.function(call.argument) : fp_chain(call, depth - 1);
  __asm__ volatile("" ::: "memory");
  return result;
}

TEST(StackCapture, SameFramesAsTheUnwinderWithFramePointers) {
  Captures captures;
  fp_chain({capture_both, &captures}, 30);
  expect_same_callers(captures);
}

TEST(StackCapture, AWalkFromAHooksCallerListsTheUnwindersFramesFromThere) {
  Captures with_frame_pointers;
  fp_chain({capture_from_the_caller, &with_frame_pointers}, 30);
  expect_walk_from_the_caller_is_the_unwinders(with_frame_pointers);
  Captures without;
  testing::nofp_chain({capture_from_the_caller, &without}, 30);
  expect_walk_from_the_caller_is_the_unwinders(without);
}

TEST(StackCapture, SameFramesAsTheUnwinderWithoutFramePointers) {
  // Twice: the second walk runs from the cache.
  std::vector<uintptr_t> first_walk;
  for (int round = 0; round < 2; ++round) {
    Captures captures;
    testing::nofp_chain({capture_both, &captures}, 30);
    expect_same_callers(captures);
    if (round == 0) first_walk = captures.fast;
    else EXPECT_EQ(captures.fast, first_walk);
  }
}

// A trace's checks: the two words of a frame record (saved %rbp, return address) are one
// 16-byte check, a word alone its own; a change in any word the walk read is seen, the
// check that failed is tried first next time, and a word it did not read changes nothing.
TEST(StackCapture, ATraceSeesAChangeInAnyWordItRead) {
  alignas(16) uintptr_t stack[8] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17};
  auto at = [&](int i) { return reinterpret_cast<uintptr_t>(&stack[i]); };
  WalkTrace trace;
  trace.clear();
  trace.note(at(1), stack[1]);  // a step reads the return address, then the saved %rbp below it
  trace.note(at(0), stack[0]);
  trace.note(at(4), stack[4]);  // a frame without a frame pointer: its return address alone
  trace.note(at(7), stack[7]);
  trace.note(at(6), stack[6]);
  trace.fold();
  trace.start = WalkStart{0x401000, at(0), 0};
  trace.complete = true;
  ASSERT_TRUE(trace.still_holds(trace.start));
  for (int word : {0, 1, 4, 6, 7}) {
    SCOPED_TRACE(word);
    const uintptr_t kept = stack[word];
    stack[word] = 0x99;
    EXPECT_FALSE(trace.still_holds(trace.start));
    EXPECT_FALSE(trace.still_holds(trace.start));  // the failed check first, then all
    stack[word] = kept;
    EXPECT_TRUE(trace.still_holds(trace.start));
  }
  stack[2] = 0x99;  // not read by the walk
  stack[5] = 0x98;
  EXPECT_TRUE(trace.still_holds(trace.start));
  WalkStart elsewhere = trace.start;
  elsewhere.sp += 16;
  EXPECT_FALSE(trace.still_holds(elsewhere));
}

// As deep as a trace goes, with odd counts of pairs and of single words (their checks run
// two at a time): every word read is checked, whichever check it falls in.
TEST(StackCapture, ADeepTraceSeesAChangeInEveryWordItRead) {
  constexpr int kPairs = WalkTrace::kMaxFrames - 3, kSingles = 3;
  alignas(16) static uintptr_t stack[2 * kPairs + 2 * kSingles];
  for (size_t i = 0; i < std::size(stack); ++i) stack[i] = 0x1000 + i;
  auto at = [&](int i) { return reinterpret_cast<uintptr_t>(&stack[i]); };
  auto trace = std::make_unique<WalkTrace>();
  trace->clear();
  std::vector<int> read;
  for (int pair = 0; pair < kPairs; ++pair) {
    trace->note(at(2 * pair + 1), stack[2 * pair + 1]);
    trace->note(at(2 * pair), stack[2 * pair]);
    read.insert(read.end(), {2 * pair, 2 * pair + 1});
  }
  for (int single = 0; single < kSingles; ++single) {
    const int word = 2 * kPairs + 2 * single + 1;  // every other word: never a pair
    trace->note(at(word), stack[word]);
    read.push_back(word);
  }
  trace->fold();
  trace->start = WalkStart{0x401000, at(0), 0};
  trace->complete = true;
  ASSERT_TRUE(trace->still_holds(trace->start));
  for (int word : read) {
    SCOPED_TRACE(word);
    const uintptr_t kept = stack[word];
    stack[word] ^= 0x100;
    EXPECT_FALSE(trace->still_holds(trace->start));
    EXPECT_FALSE(trace->still_holds(trace->start));
    stack[word] = kept;
    EXPECT_TRUE(trace->still_holds(trace->start));
  }
  for (int single = 0; single < kSingles; ++single) stack[2 * kPairs + 2 * single] = 0x99;  // not read
  EXPECT_TRUE(trace->still_holds(trace->start));
}

// The cache keeps a rule and its address's tag in one word; every field must come back as it
// went in, and a rule that does not fit must come back as Unknown (the full unwinder's case),
// never as some other rule.
TEST(StackCapture, APackedRuleReadsBackWhatWasPacked) {
  const uint64_t tag = (uint64_t{1} << 34) - 3;
  for (FrameRule rule :
       {FrameRule{16, -16, FrameRule::Cfa::FramePointer, true}, FrameRule{8, 0, FrameRule::Cfa::StackPointer, false},
        FrameRule{(1 << 19) - 1, -512, FrameRule::Cfa::StackPointer, true},
        FrameRule{-(1 << 19), 504, FrameRule::Cfa::FramePointer, true},
        FrameRule{-24, -8, FrameRule::Cfa::StackPointer, true}}) {
    const PackedFrameRule packed = PackedFrameRule::pack(tag, rule);
    EXPECT_EQ(packed.tag(), tag);
    EXPECT_EQ(packed.cfa(), rule.cfa);
    EXPECT_EQ(packed.cfa_offset(), rule.cfa_offset);
    EXPECT_EQ(packed.rbp_saved(), rule.rbp_saved);
    if (rule.rbp_saved) {
      EXPECT_EQ(packed.rbp_offset(), rule.rbp_offset);
    }
  }
  EXPECT_EQ(PackedFrameRule::pack(tag, FrameRule{0, 0, FrameRule::Cfa::Outermost, false}).cfa(),
            FrameRule::Cfa::Outermost);
  EXPECT_TRUE(
      PackedFrameRule::pack(tag, FrameRule{16, -16, FrameRule::Cfa::FramePointer, true}).is_frame_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{16, -16, FrameRule::Cfa::StackPointer, true}).is_frame_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{24, -16, FrameRule::Cfa::FramePointer, true}).is_frame_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{16, -24, FrameRule::Cfa::FramePointer, true}).is_frame_pointer_frame());
  EXPECT_TRUE(
      PackedFrameRule::pack(tag, FrameRule{8, 0, FrameRule::Cfa::StackPointer, false}).is_stack_pointer_frame());
  EXPECT_TRUE(
      PackedFrameRule::pack(tag, FrameRule{-24, 0, FrameRule::Cfa::StackPointer, false}).is_stack_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{16, -16, FrameRule::Cfa::StackPointer, true}).is_stack_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{16, 0, FrameRule::Cfa::FramePointer, false}).is_stack_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{16, -16, FrameRule::Cfa::FramePointer, true}).is_stack_pointer_frame());
  EXPECT_FALSE(PackedFrameRule::pack(tag, FrameRule{0, 0, FrameRule::Cfa::Outermost, false}).is_stack_pointer_frame());
  EXPECT_FALSE(
      PackedFrameRule::pack(tag, FrameRule{1 << 19, 0, FrameRule::Cfa::StackPointer, false}).is_stack_pointer_frame());
  for (FrameRule unfit : {FrameRule{1 << 19, -16, FrameRule::Cfa::StackPointer, true},
                          FrameRule{16, -12, FrameRule::Cfa::FramePointer, true},
                          FrameRule{16, 512, FrameRule::Cfa::FramePointer, true}}) {
    const PackedFrameRule packed = PackedFrameRule::pack(tag, unfit);
    EXPECT_EQ(packed.cfa(), FrameRule::Cfa::Unknown);
    EXPECT_EQ(packed.tag(), tag);
  }
}

TEST(StackCapture, AnUnloadForgetsTheCachedRulesAndTheWalkRefillsThem) {
  Captures before;
  testing::nofp_chain({capture_both, &before}, 25);
  expect_same_callers(before);
  const auto pc = reinterpret_cast<uintptr_t>(&capture_both) + 1;
  cached_frame_rule_at(pc);
  auto cached = [] {
    size_t entries = 0;
    for (const std::atomic<uint64_t> &entry : detail::g_rule_cache) entries += entry.load() != 0 ? 1 : 0;
    return entries;
  };
  ASSERT_GT(cached(), 0u);

  const uint64_t generation = code_generation();
  note_code_unloaded();
  EXPECT_EQ(code_generation(), generation + 1);
  EXPECT_EQ(cached(), 0u);

  Captures after;
  testing::nofp_chain({capture_both, &after}, 25);
  expect_same_callers(after);
  EXPECT_GT(cached(), 0u);
}

TEST(StackCapture, SameFramesOnAnotherThread) {
  Captures captures;
  std::thread([&] { testing::nofp_chain({capture_both, &captures}, 25); }).join();
  expect_same_callers(captures);
}

// One call site for capture_stack, whoever calls it (a loop could be unrolled into two).
__attribute__((noinline)) size_t capture_here(std::vector<uintptr_t> &frames, const ExcludedCode &excluded) {
  size_t count = capture_stack(frames.data(), frames.size(), excluded);
  __asm__ volatile("" ::: "memory");  // not a tail call
  return count;
}

TEST(StackCapture, StopsAtTheLimitAndDropsExcludedFrames) {
  // Two captures of 5 frames: all frames, then with the top frame's code (capture_stack's
  // own) excluded, which must drop exactly that frame from the top.
  struct Limited {
    std::vector<uintptr_t> all = std::vector<uintptr_t>(5);
    std::vector<uintptr_t> trimmed = std::vector<uintptr_t>(5);
    size_t all_count = 0;
    size_t trimmed_count = 0;
  } limited;
  testing::nofp_chain({[](void *argument) -> size_t {
                         auto *self = static_cast<Limited *>(argument);
                         ExcludedCode excluded;
                         self->all_count = capture_here(self->all, excluded);
                         excluded.add(CodeRange{self->all[0], self->all[0] + 1});
                         self->trimmed_count = capture_here(self->trimmed, excluded);
                         return 0;
                       },
                       &limited},
                      20);
  ASSERT_EQ(limited.all_count, 5u);
  ASSERT_EQ(limited.trimmed_count, 5u);
  // all: capture_stack's frame (its call of the walk), capture_here, this lambda (first
  // call), chain...; trimmed: capture_here, this lambda (second call), chain...
  EXPECT_EQ(limited.trimmed[0], limited.all[1]);
  EXPECT_NE(limited.trimmed[1], limited.all[2]);  // the lambda's other call site
  EXPECT_EQ(std::vector<uintptr_t>(limited.trimmed.begin() + 2, limited.trimmed.begin() + 4),
            std::vector<uintptr_t>(limited.all.begin() + 3, limited.all.end()));
}

// Capturing while an exception is in flight (from a destructor run by the unwinder) leaves
// the exception and its handler exactly as they were.
struct CapturesOnDestruction {
  Captures *captures;
  ~CapturesOnDestruction() { capture_both(captures); }
};

__attribute__((noinline)) size_t throw_from_bottom(void *argument) {
  CapturesOnDestruction guard{static_cast<Captures *>(argument)};
  throw std::runtime_error("from the bottom");
}

TEST(StackCapture, AnExceptionInFlightIsUntouched) {
  Captures captures;
  std::string caught;
  try {
    testing::nofp_chain({throw_from_bottom, &captures}, 12);
  } catch (const std::runtime_error &error) {
    caught = error.what();
  }
  EXPECT_EQ(caught, "from the bottom");
  expect_same_callers(captures, 12);
}

}  // namespace
}  // namespace leaseguard
