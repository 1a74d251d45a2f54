// Live checks (leaseguard_check, tests/victims/live_check.c): each classifies the live
// allocations while the program runs and is recorded; the report lists every check with what
// was lost and what still reachable then, and the program goes on untouched. `leaseguard
// check PID` asks a running service for one from outside (tests/victims/leaky_service.c).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "live_check_scenario.h"
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

// A check that could not read everything says so, in the report of it, as the exit's
// classification does: here the world stop cannot list the threads (no descriptor left), so
// nothing is found reachable, and what it did not find is unchecked, never lost.
TEST(LiveCheck, ACheckThatCouldNotReadEverythingSaysWhy) {
  TempDir dir;
  auto run =
      run_under_leaseguard(dir.path(), {victim("live_check"), "no_fds"}, {"--format", "text=" + (dir / "report.txt")});
  if (run.result.exit_code == 77) GTEST_SKIP() << "a descriptor limit below 256";
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  ASSERT_EQ(process["checks"].size(), 1u) << read_text(dir / "report.json");
  const JsonValue &check = process["checks"][0];
  EXPECT_TRUE(check["reachability"]["threads_not_stopped"].as_bool()) << read_text(dir / "report.json");
  EXPECT_EQ(check["reachable_allocations"].as_number(), 0);
  EXPECT_EQ(check["lost_allocations"].as_number(), 2);  // both unchecked
  // The exit read everything.
  EXPECT_FALSE(process["reachability"]["threads_not_stopped"].as_bool());
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 1);
  EXPECT_EQ(run.json["summary"]["reachable_allocations"].as_number(), 1);
  const std::string text = read_text(dir / "report.txt");
  EXPECT_NE(text.find("at the last check, the program's threads could not all be stopped"), std::string::npos) << text;
  // `report` reads it back from the JSON as from the journal.
  auto again = run_process({LEASEGUARD_BIN, "report", "--format", "text=" + (dir / "again.txt"), dir / "report.json"});
  EXPECT_NE(read_text(dir / "again.txt").find("at the last check, the program's threads"), std::string::npos)
      << again.err << read_text(dir / "again.txt");
}

// With --reachability=off there is nothing to classify with: the call says so (-1) and no
// check is recorded.
// A process forked while another of its parent's threads was checking has the parent's turn
// to classify copied, held by a thread it does not have: its exit's classification must not
// wait for that thread. Before, children hung in exit() (a service forking workers while it
// was checked every period never got them back).
TEST(LiveCheck, AChildForkedWhileItsParentChecksStillExits) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("live_check"), "fork"}, {});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_NE(run.result.out.find("150 of 150 children exited"), std::string::npos) << run.result.out;
  // Each child's process ended in the report, and the parent's classification was its own.
  EXPECT_EQ(run.json["summary"]["processes"].as_number(), 151) << read_text(dir / "report.json");
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0);
  EXPECT_EQ(run.json["summary"]["reachable_bytes"].as_number(), 64 << 20);
}

TEST(LiveCheck, WithoutReachabilityNoCheckIsMadeAndTheCallSaysSo) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("live_check")}, {"--reachability", "off"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("check 1: -1\ncheck 2: -1\n"), std::string::npos) << run.result.out;
  EXPECT_EQ(run.json["processes"][0]["checks"].size(), 0u);
}

// What a report says the checks found: lost and reachable allocations in the leases checked.
struct Found {
  size_t lost = 0, reachable = 0;
  std::set<std::string> lost_at;  // the functions of the lost ones' first frames
};
Found found_by_check(const JsonValue &json) {
  Found found;
  for (const JsonValue &lease : json["processes"][0]["leases"].items()) {
    if (lease["ended_by"].as_string() != "check") continue;
    for (const JsonValue &leak : lease["leaks"].items()) {
      if (leak["reachability"].as_string() == "reachable") {
        ++found.reachable;
        continue;
      }
      ++found.lost;
      found.lost_at.insert(first_function(leak));
    }
  }
  return found;
}

JsonValue parsed(const std::string &path) {
  JsonValue json;
  std::string error;
  EXPECT_TRUE(JsonValue::parse(read_text(path), json, error)) << error << ": " << path;
  return json;
}

}  // namespace

// The service serves requests from four threads, caches 16 buffers and drops one in ten on an
// error path. Two checks from outside, after 100 and 200 requests, find only dropped ones lost
// (of 10, then 20), the rest of what is live reachable, and the site growing; the service never
// notices (no EINTR) and ends with its own status and output. A worker's stack may still hold
// the last buffer it dropped, in a slot of the finished request's frame that its wait between
// requests has not written over: read conservatively, as LeakSanitizer reads stacks, that one
// is reachable. So each check finds at least the dropped ones less one per worker.
void two_checks_of_a_running_service(const ServiceRun &run, const std::string &dir) {
  const std::string out = dir + "/out";
  const bool periodic = run.periodic;
  std::vector<std::string> command = run.launcher;
  command.insert(command.end(), {"--out", out, "--format", "json=" + dir + "/exit.json", "--"});
  command.insert(command.end(), run.service.begin(), run.service.end());
  Conversation service(command, run.environment);
  const std::string hello = service.line();
  ASSERT_EQ(hello.rfind("pid ", 0), 0u) << hello;
  const std::string pid = hello.substr(4);

  service.send("serve 100");
  ASSERT_EQ(service.line(), "served 100");
  const RunResult first =
      run_process({LEASEGUARD_BIN, "check", "--format", "json=" + dir + "/first.json", "--fail-on-leak", pid});
  EXPECT_EQ(first.exit_code, 23) << first.err;
  constexpr size_t kWorkers = 4, kCache = 16;
  const Found at_first = found_by_check(parsed(dir + "/first.json"));
  EXPECT_LE(at_first.lost, 10u);
  EXPECT_GE(at_first.lost, 10u - kWorkers);
  EXPECT_EQ(at_first.lost + at_first.reachable, 10u + kCache);  // every live one classified
  if (!run.site.empty()) {
    EXPECT_EQ(at_first.lost_at, std::set<std::string>{run.site});
  }
  EXPECT_NE(first.out.find("checked at "), std::string::npos) << first.out;

  service.send("serve 100");
  ASSERT_EQ(service.line(), "served 200");
  if (periodic) {  // until leaseguard's own thread has checked since: an event, however slow the machine
    const size_t checks_at_first = parsed(dir + "/first.json")["processes"][0]["checks"].size();
    for (int round = 0;; ++round) {
      const std::string between = dir + "/between" + std::to_string(round) + ".json";
      ASSERT_EQ(run_process({LEASEGUARD_BIN, "report", "--quiet", "--format", "json=" + between, out}).exit_code, 0);
      if (parsed(between)["processes"][0]["checks"].size() > checks_at_first) break;
    }
  }
  const RunResult second = run_process({LEASEGUARD_BIN, "check", "--format", "json=" + dir + "/second.json", "--format",
                                        "text=" + dir + "/second.txt", pid});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  const JsonValue json = parsed(dir + "/second.json");
  const Found at_second = found_by_check(json);
  EXPECT_LE(at_second.lost, 20u);
  EXPECT_GE(at_second.lost, 20u - kWorkers);
  EXPECT_EQ(at_second.lost + at_second.reachable, 20u + kCache);
  EXPECT_GT(at_second.lost, at_first.lost);  // 16 at least, against 10 at most
  if (!run.site.empty()) {
    EXPECT_EQ(at_second.lost_at, std::set<std::string>{run.site});
  }
  const JsonValue &process = json["processes"][0];
  EXPECT_TRUE(process["running"].as_bool());
  ASSERT_EQ(process["growth"].size(), 1u) << read_text(dir + "/second.json");
  const JsonValue &site = process["growth"][0];
  EXPECT_TRUE(site["growing"].as_bool());
  EXPECT_EQ(site["lost_bytes"].as_number(), static_cast<double>(at_second.lost * 4096));
  EXPECT_GT(site["rate_bytes_per_s"].as_number(), 0);
  const std::string text = read_text(dir + "/second.txt");
  if (!periodic) {  // the two checks are the only ones: the growth is between them
    EXPECT_EQ(process["checks"].size(), 2u);
    const auto growth = static_cast<size_t>(site["growth_allocations"].as_number());
    EXPECT_EQ(growth, at_second.lost - at_first.lost);
    EXPECT_EQ(site["growth_bytes"].as_number(), static_cast<double>(growth * 4096));
    EXPECT_EQ(site["since_first_check_bytes"].as_number(), static_cast<double>(growth * 4096));
    EXPECT_NE(text.find("growing: +" + std::to_string(growth * 4096) + " byte(s) since the first check, "),
              std::string::npos)
        << text;
  } else {  // others came between, and one may have come before any request
    EXPECT_GE(process["checks"].size(), 3u);
    EXPECT_GE(site["since_first_check_bytes"].as_number(), static_cast<double>((at_second.lost - 10) * 4096));
    EXPECT_NE(text.find("growing: +"), std::string::npos) << text;
  }
  // The JSON report read back says the same of the site.
  const RunResult reread = run_process({LEASEGUARD_BIN, "report", dir + "/second.json"});
  EXPECT_NE(reread.out.find("growing: +"), std::string::npos) << reread.out << reread.err;
  // One group: a check records no stack anew (it used to start a new code generation, its
  // look at the loaded drivers taken for an unload, and every later stack had a new id).
  EXPECT_EQ(text.find("Direct leak of"), text.rfind("Direct leak of")) << text;

  if (run.while_running) run.while_running(at_second.lost * 4096);

  // `report` of the run while it runs reads a last check too.
  const RunResult report = run_process({LEASEGUARD_BIN, "report", out});
  EXPECT_NE(report.out.find(") is running\n"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("checked at "), std::string::npos) << report.out;

  service.send("quit 7");
  EXPECT_EQ(service.line(), "quit: EINTR 0");
  EXPECT_EQ(service.wait(), 7);  // its own status, through `run` or `lease start`
  const JsonValue ended = parsed(dir + "/exit.json");
  EXPECT_FALSE(ended["processes"][0]["running"].as_bool());
  EXPECT_GE(ended["processes"][0]["checks"].size(), 2u);
  // The workers have ended: no stale stack slot holds a dropped buffer (what the process's
  // own memory may still hold of one, run.stale_at_exit says).
  EXPECT_LE(ended["summary"]["leaked_allocations"].as_number(), 20);
  EXPECT_GE(ended["summary"]["leaked_allocations"].as_number(), static_cast<double>(20 - run.stale_at_exit));
  // Gone, it cannot be asked: one line, exit 2.
  const RunResult gone = run_process({LEASEGUARD_BIN, "check", pid});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_EQ(gone.err, "leaseguard: error: no process " + pid + "\n");
}

// `top` (its last column, LOST) says what the last check found lost: `lost_bytes` as top
// writes a size.
void expect_top_shows_lost(const std::vector<std::string> &top_options, uint64_t lost_bytes, const std::string &site) {
  std::vector<std::string> argv = {LEASEGUARD_BIN, "top", "--once"};
  argv.insert(argv.end(), top_options.begin(), top_options.end());
  const RunResult top = run_process(argv);
  EXPECT_EQ(top.exit_code, 0) << top.err;
  char expected[48];
  std::snprintf(expected, sizeof expected, " %.1f KiB\n", static_cast<double>(lost_bytes) / 1024);
  EXPECT_NE(top.out.find(" LOST\n"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find(expected), std::string::npos) << expected << " in\n" << top.out;
  EXPECT_NE(top.out.find("  growing: " + site + " "), std::string::npos) << top.out;
}

namespace {

TEST(LiveCheck, TwoChecksOfARunningServiceFindOnlyItsDroppedBuffersAndTheSiteGrowing) {
  TempDir dir;
  ServiceRun run;
  run.launcher = {LEASEGUARD_BIN, "run", "--sim", "--quiet"};
  run.service = {victim("leaky_service")};
  run.while_running = [&](uint64_t lost_bytes) {
    expect_top_shows_lost({"--out", dir / "out", "--socket", dir / "no.sock"}, lost_bytes, "handle_request");
  };
  two_checks_of_a_running_service(run, dir.path());
}

// The same while leaseguard checks every 20 ms from its own thread: both kinds of check run,
// each finds only dropped buffers lost, and the site grows from the first check on.
TEST(LiveCheck, TheSameWhileItIsAlsoCheckedEveryPeriod) {
  TempDir dir;
  ServiceRun run;
  run.launcher = {LEASEGUARD_BIN, "run", "--sim", "--quiet", "--check-every", "20ms"};
  run.service = {victim("leaky_service")};
  run.periodic = true;
  two_checks_of_a_running_service(run, dir.path());
}

// The same service in Python (tests/victims/leaky_service.py): its pointers are ints in a dict,
// read through the interpreter's object allocator (pymalloc), as the exit's classification
// reads them; the dropped ints are freed objects, never read. The dict's table is a block of
// the host heap, made again as the cache turns over, while the driver's tables keep the
// addresses of device memory freed since: were those host heap addresses, the table would read
// as the driver's and the whole cache as lost (sim/sim_device_heap.h;
// Reachability.ABlockWhereDeviceMemoryWasFreedStaysTheProgramsOwn).
TEST(LiveCheck, TheSameForAPythonService) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0 || access("/usr/bin/setarch", X_OK) != 0)
    GTEST_SKIP() << "no " << python << " or /usr/bin/setarch";
  TempDir dir;
  ServiceRun run;
  run.launcher = {LEASEGUARD_BIN, "run", "--sim", "--quiet"};
  // Debian's python3 is not position-independent: setarch -R as reachability_test.cpp says.
  run.service = {"/usr/bin/setarch", "x86_64", "-R", python,
                 std::string(LEASEGUARD_SOURCE_ROOT) + "/tests/victims/leaky_service.py"};
  run.site = "";
  run.environment = {{"PATH", "/usr/bin:/bin"},
                     {"PYTHONHOME", ""},
                     {"PYTHONPATH", ""},
                     {"PYTHONNOUSERSITE", "1"},
                     {"PYTHONMALLOC", "pymalloc"}};
  run.stale_at_exit = 4;
  two_checks_of_a_running_service(run, dir.path());
}

// A process not under leaseguard is named as such, and a bad PID is a usage error.
TEST(LiveCheck, CheckRefusesWhatIsNotAProcessUnderLeaseguard) {
  const RunResult self = run_process({LEASEGUARD_BIN, "check", std::to_string(getpid())});
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_EQ(self.err, "leaseguard: error: process " + std::to_string(getpid()) + " is not running under leaseguard\n");
  const RunResult word = run_process({LEASEGUARD_BIN, "check", "me"});
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.err.find("'check' me: not a process id"), std::string::npos) << word.err;
}

}  // namespace
