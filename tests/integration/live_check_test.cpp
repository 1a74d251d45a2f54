// Live checks (leaseguard_check, tests/victims/live_check.c): each classifies the live
// allocations while the program runs and is recorded; the report lists every check with what
// was lost and what still reachable then, and the program goes on untouched.
#include <gtest/gtest.h>

#include <string>

#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

TEST(LiveCheck, EachCheckRecordsWhatWasLostThenAndTheProgramGoesOn) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("live_check")}, {"--format", "text=" + (dir / "report.txt")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("check 1: 0\ncheck 2: 0\n"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("worker read 1\n"), std::string::npos) << run.result.out;  // no EINTR
  const JsonValue &process = run.json["processes"][0];
  const JsonValue &checks = process["checks"];
  ASSERT_EQ(checks.size(), 2u) << read_text(dir / "report.json");
  EXPECT_EQ(checks[0]["lost_allocations"].as_number(), 2);
  EXPECT_EQ(checks[0]["lost_bytes"].as_number(), 1000 + 1001);
  // The buffer freed after this check was live and held at it.
  EXPECT_EQ(checks[0]["reachable_allocations"].as_number(), 4);
  EXPECT_EQ(checks[0]["reachable_bytes"].as_number(), 3000 + 3001 + 3002 + 4000);
  EXPECT_EQ(checks[1]["lost_allocations"].as_number(), 5);
  EXPECT_EQ(checks[1]["lost_bytes"].as_number(), 1000 + 1001 + 1002 + 1003 + 1004);
  EXPECT_EQ(checks[1]["reachable_allocations"].as_number(), 3);
  EXPECT_LE(checks[0]["time_ms"].as_number(), checks[1]["time_ms"].as_number());
  // The checks ended nothing: the exit classified and reported as without them.
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 5);
  EXPECT_EQ(run.json["summary"]["reachable_allocations"].as_number(), 3);
  EXPECT_NE(read_text(dir / "report.txt").find("2 live check(s); the last, at "), std::string::npos);
  EXPECT_NE(read_text(dir / "report.txt")
                .find("found 5 allocation(s) of 5010 byte(s) lost and 3 of 9003 byte(s) still reachable"),
            std::string::npos)
      << read_text(dir / "report.txt");
  // `report` of the run reads the same checks back from its journals.
  auto again = run_process({LEASEGUARD_BIN, "report", "--format", "json=" + (dir / "again.json"), dir.path()});
  JsonValue reread;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "again.json"), reread, error)) << error << again.err;
  ASSERT_EQ(reread["processes"][0]["checks"].size(), 2u);
  EXPECT_EQ(reread["processes"][0]["checks"][1]["lost_bytes"].as_number(), 5010);
}

// A lease ended from the program's thread is classified reading that thread's stack from the
// program's frame up, not from inside leaseguard's frames, whose unwritten slots hold what the
// program's last calls left there: the buffer dropped just before the end is lost.
TEST(LiveCheck, ALeaseEndedRightAfterADropFindsTheDroppedBufferLost) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("live_check"), "lease"}, {"--reachability", "leases"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("lease end: 2\n"), std::string::npos) << run.result.out;
}

// With --reachability=off there is nothing to classify with: the call says so (-1) and no
// check is recorded.
TEST(LiveCheck, WithoutReachabilityNoCheckIsMadeAndTheCallSaysSo) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("live_check")}, {"--reachability", "off"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("check 1: -1\ncheck 2: -1\n"), std::string::npos) << run.result.out;
  EXPECT_EQ(run.json["processes"][0]["checks"].size(), 0u);
}

}  // namespace
