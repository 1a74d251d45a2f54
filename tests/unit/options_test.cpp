// Environment and duration parsing: good values, and every kind of bad value.
#include <gtest/gtest.h>

#include <map>

#include "options.h"
#include "pid_namespace.h"

namespace leaseguard {
namespace {

Options parse(const std::map<std::string, std::string> &environment, std::vector<std::string> &warnings) {
  return parse_options(
      [&](const char *name) -> const char * {
        auto it = environment.find(name);
        return it == environment.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

TEST(Duration, AcceptsEachUnit) {
  EXPECT_EQ(parse_duration_ms("250ms"), 250u);
  EXPECT_EQ(parse_duration_ms("30s"), 30'000u);
  EXPECT_EQ(parse_duration_ms("5m"), 300'000u);
  EXPECT_EQ(parse_duration_ms("2h"), 7'200'000u);
  EXPECT_EQ(parse_duration_ms("0"), 0u);
}

TEST(Duration, RejectsMalformedAndOverflowingValues) {
  for (const char *bad : {"", "ms", "10", "-5s", "5x", "5 s", "1.5s", "s5", "99999999999999999999s",
                          "18446744073709551615h", "5ms ", "0x10s"})
    EXPECT_FALSE(parse_duration_ms(bad).has_value()) << bad;
}

TEST(Integer, ChecksRangeAndTrailingText) {
  EXPECT_EQ(parse_integer("16", 0, 64), 16);
  EXPECT_FALSE(parse_integer("65", 0, 64));
  EXPECT_FALSE(parse_integer("-1", 0, 64));
  EXPECT_FALSE(parse_integer("16x", 0, 64));
  EXPECT_FALSE(parse_integer("", 0, 64));
  EXPECT_FALSE(parse_integer("99999999999999999999999", 0, 64));
}

TEST(Environment, DefaultsWithoutVariables) {
  std::vector<std::string> warnings;
  Options options = parse({}, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(options.disabled);
  EXPECT_EQ(options.stack_depth, 16);
  EXPECT_EQ(options.ttl_ms, 0u);
  EXPECT_EQ(options.on_expiry, Policy::Report);
  EXPECT_EQ(options.log_level, LogLevel::Info);
}

TEST(Environment, ReadsEveryVariable) {
  std::vector<std::string> warnings;
  Options options = parse({{"LEASEGUARD_OUT", "/tmp/x"},
                           {"LEASEGUARD_TTL", "30s"},
                           {"LEASEGUARD_ON_EXPIRY", "abort"},
                           {"LEASEGUARD_STACK_DEPTH", "0"},
                           {"LEASEGUARD_DISABLE", "1"},
                           {"LEASEGUARD_LOG", "debug"},
                           {"LEASEGUARD_RUN_ID", "lg-1a2b-42"},
                           {"LEASEGUARD_AUTHORITY_LEASE", "17"},
                           {"LEASEGUARD_JOURNAL", "compact"}},
                          warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(options.out_dir, "/tmp/x");
  EXPECT_EQ(options.ttl_ms, 30'000u);
  EXPECT_EQ(options.on_expiry, Policy::Abort);
  EXPECT_EQ(options.stack_depth, 0);
  EXPECT_EQ(options.journal_mode, JournalMode::Compact);
  EXPECT_TRUE(options.disabled);
  EXPECT_EQ(options.log_level, LogLevel::Debug);
  EXPECT_EQ(options.run_id, "lg-1a2b-42");
  EXPECT_EQ(options.authority_lease, "17");
}

TEST(Environment, EachBadValueWarnsOnceAndKeepsTheDefault) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"LEASEGUARD_TTL", "soon"},
      {"LEASEGUARD_TTL", "-1s"},
      {"LEASEGUARD_TTL", ""},
      {"LEASEGUARD_ON_EXPIRY", "kill"},
      {"LEASEGUARD_ON_EXPIRY", ""},
      {"LEASEGUARD_STACK_DEPTH", "-3"},
      {"LEASEGUARD_STACK_DEPTH", "65"},
      {"LEASEGUARD_STACK_DEPTH", "1e9"},
      {"LEASEGUARD_STACK_DEPTH", ""},
      {"LEASEGUARD_LOG", "verbose"},
      {"LEASEGUARD_DISABLE", "maybe"},
      {"LEASEGUARD_OUT", ""},
      {"LEASEGUARD_RUN_ID", "../x"},
      {"LEASEGUARD_STACK_DEPTH", "99999999999999999999999"},
      {"LEASEGUARD_JOURNAL", "small"},
      {"LEASEGUARD_JOURNAL", ""},
      {"LEASEGUARD_JOURNAL", "Compact"},
      {"LEASEGUARD_AUTHORITY_LEASE", "job"},
      {"LEASEGUARD_AUTHORITY_LEASE", "0"},
      {"LEASEGUARD_AUTHORITY_LEASE", "-4"},
  };
  for (const auto &[name, value] : cases) {
    std::vector<std::string> warnings;
    Options options = parse({{name, value}}, warnings);
    ASSERT_EQ(warnings.size(), 1u) << name << "=" << value;
    EXPECT_NE(warnings[0].find(name), std::string::npos);
    EXPECT_NE(warnings[0].find("using"), std::string::npos);
    EXPECT_EQ(options.stack_depth, 16);
    EXPECT_EQ(options.journal_mode, JournalMode::Full);
    EXPECT_EQ(options.ttl_ms, 0u);
    EXPECT_EQ(options.on_expiry, Policy::Report);
    EXPECT_FALSE(options.disabled);
    EXPECT_EQ(options.out_dir, "leaseguard-out");
    EXPECT_TRUE(options.authority_lease.empty());
  }
}

// A process in a PID namespace other than its run's says which in its journals' name; the
// lease authority reads the name back to find a found process's journals.
TEST(PidNamespace, AJournalNameCarriesTheNamespaceOnlyWhereItIsNotTheRuns) {
  std::vector<std::string> warnings;
  Options options = parse({{"LEASEGUARD_RUN_PID_NAMESPACE", "4026531836"}}, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(options.run_pid_namespace, 4026531836u);
  EXPECT_EQ(journal_process_name(42, 4026531836, options.run_pid_namespace), "42");
  EXPECT_EQ(journal_process_name(1, 4026532174, options.run_pid_namespace), "1-ns4026532174");
  EXPECT_EQ(journal_process_name(1, 4026532174, 0), "1");  // run's namespace unknown: as before
  EXPECT_EQ(journal_process_name(1, 0, 4026531836), "1");
  uint64_t namespace_id = 7;
  EXPECT_TRUE(parse_journal_process_name("42", namespace_id));
  EXPECT_EQ(namespace_id, 0u);
  EXPECT_TRUE(parse_journal_process_name("1-ns4026532174", namespace_id));
  EXPECT_EQ(namespace_id, 4026532174u);
  for (const char *bad : {"", "-ns1", "1-ns", "1-ns0", "x1", "1-nsx", "1.2", "1-ns1-ns2"})
    EXPECT_FALSE(parse_journal_process_name(bad, namespace_id)) << bad;
  EXPECT_NE(pid_namespace_of(), 0u);  // this process's, where /proc is mounted

  parse({{"LEASEGUARD_RUN_PID_NAMESPACE", "ns"}}, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("LEASEGUARD_RUN_PID_NAMESPACE='ns' is not valid"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace leaseguard

namespace leaseguard {
namespace {

TEST(Deadline, AcceptsEpochSecondsAndRfc3339) {
  EXPECT_EQ(parse_deadline_ns("@0"), 0u);
  EXPECT_EQ(parse_deadline_ns("@1764439200"), 1764439200ull * 1'000'000'000ull);
  EXPECT_EQ(parse_deadline_ns("@1764439200.25"), 1764439200ull * 1'000'000'000ull + 250'000'000ull);
  EXPECT_EQ(parse_deadline_ns("2025-11-29T18:00:00Z"), 1764439200ull * 1'000'000'000ull);
  EXPECT_EQ(parse_deadline_ns("2025-11-29T19:00:00+01:00"), 1764439200ull * 1'000'000'000ull);
  EXPECT_EQ(parse_deadline_ns("2025-11-29T18:00:00.5Z"), 1764439200ull * 1'000'000'000ull + 500'000'000ull);
  EXPECT_EQ(parse_deadline_ns("2000-02-29T00:00:00Z"), 951782400ull * 1'000'000'000ull);
}

TEST(Deadline, RejectsMalformedTimes) {
  for (const char *bad :
       {"", "@", "@-5", "@1.", "@1.1234567890", "@abc", "2025-11-29", "2025-11-29T18:00:00", "2025-13-29T18:00:00Z",
        "2025-11-29T24:00:00Z", "2025-11-29T18:00:00+1:00", "1969-12-31T23:59:59Z", "2025-11-29 18:00:00Z",
        "@99999999999999999999",
        // Not days of the calendar:
        "2025-02-31T00:00:00Z", "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2025-04-31T12:00:00Z",
        "2025-06-31T12:00:00Z", "2025-09-31T12:00:00Z", "2025-11-31T12:00:00Z"})
    EXPECT_FALSE(parse_deadline_ns(bad).has_value()) << bad;
  EXPECT_TRUE(parse_deadline_ns("2024-02-29T00:00:00Z").has_value());  // a leap day
  EXPECT_TRUE(parse_deadline_ns("2025-01-31T00:00:00Z").has_value());
}

// @0 is a time (the epoch), not "no deadline": it is past, and ends the process lease at
// once, with a warning that says so; so does any deadline already past.
TEST(Deadline, ADeadlineAlreadyPastIsKeptAndSaidSo) {
  const uint64_t now = 1'764'439'200ull * 1'000'000'000ull;
  for (const char *past : {"@0", "@1764439199", "2025-11-29T17:59:59Z"}) {
    std::vector<std::string> warnings;
    Options options = parse_options(
        [&](const char *name) { return std::string(name) == "LEASEGUARD_DEADLINE" ? past : nullptr; }, warnings, now);
    ASSERT_TRUE(options.deadline_unix_ns.has_value()) << past;
    EXPECT_LT(*options.deadline_unix_ns, now);
    ASSERT_EQ(warnings.size(), 1u) << past;
    EXPECT_EQ(warnings[0], "LEASEGUARD_DEADLINE='" + std::string(past) +
                               "' is already past: the process lease ends as the process starts");
  }
  std::vector<std::string> warnings;
  Options future = parse_options(
      [](const char *name) { return std::string(name) == "LEASEGUARD_DEADLINE" ? "@1764439201" : nullptr; }, warnings,
      now);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(future.deadline_unix_ns, 1764439201ull * 1'000'000'000ull);
}

TEST(Environment, BadDeadlineWarns) {
  std::vector<std::string> warnings;
  Options options = parse({{"LEASEGUARD_DEADLINE", "tomorrow"}}, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("LEASEGUARD_DEADLINE='tomorrow' is not valid"), std::string::npos);
  EXPECT_FALSE(options.deadline_unix_ns.has_value());
}

}  // namespace
}  // namespace leaseguard
