// Suppressions: LeakSanitizer's pattern semantics, the extensions, parse errors, applying.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "suppressions.h"

namespace leaseguard::report {
namespace {

TEST(SuppressionPattern, LeakSanitizerSemantics) {
  EXPECT_TRUE(suppression_pattern_matches("blur", "image_blur_pass"));  // substring
  EXPECT_TRUE(suppression_pattern_matches("^blur", "blur_pass"));
  EXPECT_FALSE(suppression_pattern_matches("^blur", "image_blur"));
  EXPECT_TRUE(suppression_pattern_matches("blur$", "image_blur"));
  EXPECT_FALSE(suppression_pattern_matches("blur$", "blur_pass"));
  EXPECT_TRUE(suppression_pattern_matches("^blur$", "blur"));
  EXPECT_TRUE(suppression_pattern_matches("lib*.so", "/usr/lib/libthird.so.1"));
  EXPECT_TRUE(suppression_pattern_matches("^/usr/*/libthird*", "/usr/lib/libthird.so.1"));
  EXPECT_FALSE(suppression_pattern_matches("^/opt/*", "/usr/lib/libthird.so.1"));
  EXPECT_TRUE(suppression_pattern_matches("a*b*c", "xxaYYbZZcxx"));
  EXPECT_FALSE(suppression_pattern_matches("a*b*c", "xxcYYbZZa"));
  EXPECT_TRUE(suppression_pattern_matches("*", ""));
  // A pathological pattern finishes quickly (no backtracking explosion).
  EXPECT_FALSE(suppression_pattern_matches("^" + std::string(60, 'a') + "*b$", std::string(5000, 'a')));
}

TEST(Suppressions, ParsesRulesQualifiersAndComments) {
  Suppressions suppressions;
  std::string error;
  ASSERT_TRUE(
      suppressions.parse("# third party\n\n  leak:libthird.so\nleak:^warm_up$ min_bytes=1M\n"
                         "leak:pool_* api=cuMemAllocAsync*\n",
                         "s.txt", error))
      << error;
  ASSERT_EQ(suppressions.entries().size(), 3u);
  EXPECT_EQ(suppressions.entries()[1].min_bytes, 1u << 20);
  EXPECT_EQ(suppressions.entries()[2].api_pattern, "cuMemAllocAsync*");
  EXPECT_EQ(suppressions.entries()[2].source, "s.txt:5");
}

TEST(Suppressions, EachBadLineIsOneClearError) {
  for (const char *bad : {"leak:", "called_from_lib:x", "nonsense", "leak:x color=red", "leak:x min_bytes=lots",
                          "leak:x min_bytes=99999999999999999999G", "leak:x api="}) {
    Suppressions suppressions;
    std::string error;
    EXPECT_FALSE(suppressions.parse(std::string("# ok\n") + bad + "\n", "s.txt", error)) << bad;
    EXPECT_EQ(error.rfind("s.txt:2: ", 0), 0u) << error;
  }
}

TEST(Suppressions, ApplyMatchesModuleFunctionOrFileAndQualifiers) {
  Report report;
  ProcessReport process;
  process.add_stack(
      1, {Frame{"/usr/lib/libthird.so", "", 0x10, 0x10, std::string("third_init"), std::nullopt, std::nullopt},
          Frame{"/app/main", "", 0x20, 0x20, std::string("main"), std::string("main.c"), 3}});
  process.add_stack(2, {Frame{"/app/main", "", 0x30, 0x30, std::string("warm_up"), std::string("warm.c"), 9}});
  LeaseEnding lease;
  auto leak = [](uint32_t stack, uint64_t bytes, Api api) {
    Leak l;
    l.stack_id = stack;
    l.bytes = bytes;
    l.api = api;
    return l;
  };
  lease.leaks = {leak(1, 100, Api::cuMemAlloc_v2), leak(2, 100, Api::cuMemAlloc_v2),
                 leak(2, 4 << 20, Api::cuMemAlloc_v2), leak(2, 4 << 20, Api::cuMemAllocAsync)};
  process.leases.push_back(lease);
  report.processes.push_back(process);

  Suppressions suppressions;
  std::string error;
  ASSERT_TRUE(suppressions.parse("leak:libthird\nleak:warm.c min_bytes=1M api=cuMemAlloc_v2\n", "s", error));
  suppressions.apply(report);
  const auto &kept = report.processes[0].leases[0].leaks;
  ASSERT_EQ(kept.size(), 2u);  // the small warm_up leak and the async one stay
  EXPECT_EQ(kept[0].bytes, 100u);
  EXPECT_EQ(kept[1].api, Api::cuMemAllocAsync);
  EXPECT_EQ(report.suppressed_allocations, 2u);
  ASSERT_EQ(report.suppressions_used.size(), 2u);
  EXPECT_EQ(report.suppressions_used[1].rule, "leak:warm.c api=cuMemAlloc_v2 min_bytes=1048576");
  EXPECT_EQ(suggest_suppression(report.processes[0], 1), "leak:^third_init$");
}

TEST(Suppressions, APatternRunsToItsQualifiersSpacesIncludedAndATrailingCommentIsNoPart) {
  Suppressions suppressions;
  std::string error;
  ASSERT_TRUE(
      suppressions.parse("leak:libthirdparty.so                 # a module\n"
                         "leak:^(anonymous namespace)::Fixture_Leaks_Test::TestBody()$\n"
                         "leak:^main::{lambda(int)#1}::operator()(int) const$ min_bytes=1K # lambda\n"
                         "leak:pool_* api=cuMemAllocAsync*      # extension\n",
                         "s.txt", error))
      << error;
  ASSERT_EQ(suppressions.entries().size(), 4u);
  EXPECT_EQ(suppressions.entries()[0].pattern, "libthirdparty.so");
  EXPECT_EQ(suppressions.entries()[1].pattern, "^(anonymous namespace)::Fixture_Leaks_Test::TestBody()$");
  EXPECT_EQ(suppressions.entries()[2].pattern, "^main::{lambda(int)#1}::operator()(int) const$");
  EXPECT_EQ(suppressions.entries()[2].min_bytes, 1024u);
  EXPECT_EQ(suppressions.entries()[3].pattern, "pool_*");
}

// Whatever a function is called, the line --gen-suppressions writes for it parses, and
// suppresses the leak it was written for.
void expect_generated_rule_suppresses(const std::string &function) {
  Report report;
  ProcessReport process;
  process.add_stack(1, {Frame{"/app/main", "", 0x10, 0x10, function, std::nullopt, std::nullopt}});
  LeaseEnding lease;
  Leak leak;
  leak.stack_id = 1;
  leak.bytes = 64;
  leak.api = Api::cuMemAlloc_v2;
  lease.leaks = {leak};
  process.leases.push_back(lease);
  report.processes.push_back(process);
  const std::string rule = suggest_suppression(report.processes[0], 1);
  Suppressions suppressions;
  std::string error;
  ASSERT_TRUE(suppressions.parse(rule + "\n", "generated", error))
      << "function: " << function << "\nrule: " << rule << "\n"
      << error;
  suppressions.apply(report);
  EXPECT_EQ(report.suppressed_allocations, 1u) << "function: " << function << "\nrule: " << rule;
}

TEST(Suppressions, EveryGeneratedLineReadsBackAndSuppressesItsLeak) {
  for (const char *function : {
           "main",
           "blur_pass",                                                 // C
           "ns::Pool<int, std::allocator<int> >::grow(unsigned long)",  // templates
           "(anonymous namespace)::Fixture_Leaks_Test::TestBody()",     // anonymous namespace
           "main::{lambda(int)#1}::operator()(int) const",              // lambdas
           "std::_Function_handler<void (), main::{lambda()#2}>::_M_invoke(std::_Any_data const&)",
           "Buffer::operator=(Buffer const&)",
           "operator==(Buffer const&, Buffer const&)",  // operators
           "operator new(unsigned long)",
           "operator<<(std::ostream&, Buffer const&)",
           "Buffer::operator()()",
           "_ZN4core3ptr13drop_in_place17h0123456789abcdefE",                   // Rust, mangled
           "core::ptr::drop_in_place<alloc::vec::Vec<u8>>::h0123456789abcdef",  // Rust, legacy
           "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",             // Rust, a trait impl
           "_RNvCs1234_7mycrate4main",                                          // Rust, v0 mangled
           "f #1",
           "f min_bytes=1",
           "f api=x",
           "f a=b",
           "f\tg",
           "f $",
           "^",
           "$",
           "*",
           " f ",  // hostile
       })
    expect_generated_rule_suppresses(function);
  // And names drawn at random from the characters that matter to the parser.
  std::mt19937 random(11);
  const std::string alphabet = "ab_:=# \t*^$(){}<>,.&~";
  for (int i = 0; i < 2000; ++i) {
    std::string function(1 + random() % 24, ' ');
    for (char &c : function) c = alphabet[random() % alphabet.size()];
    expect_generated_rule_suppresses(function);
  }
}

}  // namespace
}  // namespace leaseguard::report
