// Suppressions: LeakSanitizer's pattern semantics, the extensions, parse errors, applying.
#include <gtest/gtest.h>

#include "report/suppressions.h"

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

}  // namespace
}  // namespace leaseguard::report
