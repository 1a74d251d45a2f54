// Victim programs under `leaseguard run --sim`: every hooked entry point, the dlopen and
// cuGetProcAddress paths, threads, fork and exec, TTL expiry, kills, explicit leases, and
// the host program left unharmed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "entry_points.h"
#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

const JsonValue *lease_named(const JsonValue &process, const std::string &name, const std::string &ended_by) {
  for (const auto &lease : process["leases"].items())
    if (lease["name"].as_string() == name && lease["ended_by"].as_string() == ended_by) return &lease;
  return nullptr;
}

void expect_direct_calls_report(const LeaseguardRun &run) {
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("direct_calls done"), std::string::npos);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_TRUE(process["complete"].as_bool());
  EXPECT_GE(process["unknown_frees"].as_number(), 1);

  // (entry point, bytes, kind, function that leaked it)
  std::set<std::tuple<std::string, int, std::string, std::string>> expected = {
      {"cuMemAlloc_v2", 1000, "device", "leak_cuMemAlloc_v2"},
      {"cuMemAlloc", 1016, "device", "leak_cuMemAlloc_legacy"},
      {"cuMemAllocPitch_v2", 1536, "pitched", "leak_cuMemAllocPitch_v2"},
      {"cuMemAllocPitch", 2560, "pitched", "leak_cuMemAllocPitch_legacy"},
      {"cuMemAllocManaged", 1032, "managed", "leak_cuMemAllocManaged"},
      {"cuMemAllocHost", 1048, "host", "leak_cuMemAllocHost"},
      {"cuMemAllocHost_v2", 1064, "host", "leak_cuMemAllocHost_v2"},
      {"cuMemHostAlloc", 1080, "host", "leak_cuMemHostAlloc"},
      {"cuMemAllocAsync", 1096, "async", "leak_cuMemAllocAsync"},
      {"cuMemAllocAsync_ptsz", 1112, "async", "leak_cuMemAllocAsync_ptsz"},
      {"cuMemAllocFromPoolAsync", 1128, "async", "leak_cuMemAllocFromPoolAsync"},
      {"cuMemAllocFromPoolAsync_ptsz", 1144, "async", "leak_cuMemAllocFromPoolAsync_ptsz"},
  };
  const JsonValue *at_exit = lease_named(process, "process", "exit");
  ASSERT_NE(at_exit, nullptr);
  std::set<std::tuple<std::string, int, std::string, std::string>> seen;
  for (const auto &leak : (*at_exit)["leaks"].items())
    seen.insert({leak["api"].as_string(), static_cast<int>(leak["bytes"].as_number()), leak["kind"].as_string(),
                 first_function(leak)});
  EXPECT_EQ(seen, expected);

  // Implicit frees by context destroy (both generations) and primary-context reset.
  int destroyed = 0;
  std::multiset<int> destroyed_bytes;
  for (const auto &lease : process["leases"].items()) {
    if (lease["ended_by"].as_string() != "context_destroy") continue;
    for (const auto &leak : lease["leaks"].items()) {
      ++destroyed;
      destroyed_bytes.insert(static_cast<int>(leak["bytes"].as_number()));
      std::string function = first_function(leak);
      EXPECT_TRUE(function == "leak_into_destroyed_context" || function == "leak_into_reset_primary") << function;
      if (leak["bytes"].as_number() == 3000) {
        EXPECT_EQ(leak["device"].as_number(), 1);
      }
    }
  }
  EXPECT_EQ(destroyed, 3);
  EXPECT_EQ(destroyed_bytes, (std::multiset<int>{2000, 2000, 3000}));
  // Every one recorded, whether the program still reached it at exit or not (a value left
  // on a dead stack frame may keep one reachable, the more so in an instrumented build).
  EXPECT_EQ(
      run.json["summary"]["leaked_allocations"].as_number() + run.json["summary"]["reachable_allocations"].as_number(),
      15);
}

TEST(Victims, EveryHookedEntryPointLinkedDirectly) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("direct_calls")}, {}, {{"LEASEGUARD_SIM_DEVICES", "2"}});
  expect_direct_calls_report(run);
}

TEST(Victims, EveryHookedEntryPointBuiltAgainstTheToolkitHeader) {
  if (!LEASEGUARD_HAVE_TOOLKIT) GTEST_SKIP() << "no CUDA Toolkit on this machine";
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("direct_calls_toolkit")}, {}, {{"LEASEGUARD_SIM_DEVICES", "2"}});
  expect_direct_calls_report(run);
}

// A destroyed context's handle, handed out again for another device: what the hooks
// remember of a handle's device must not outlive its context.
// Where reading the coarse clock is a system call (gVisor; slow_coarse_clock.c stands in),
// events take CLOCK_MONOTONIC: the report gives its grain (under a microsecond, 0.000 ms)
// and is otherwise the same. The stand-in is preloaded into the program alone, beside
// leaseguard's preload (the CLI may be built with a sanitizer that must come first).
TEST(Victims, WhereTheCoarseClockIsASystemCallEventsTakeTheFineOne) {
  TempDir plain_out;
  auto plain = run_under_leaseguard(plain_out.path(), {victim("direct_calls")}, {}, {{"LEASEGUARD_SIM_DEVICES", "2"}});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  EXPECT_GE(plain.json["processes"][0]["event_time_resolution_ms"].as_number(), 0.001) << "the kernel's tick here";

  TempDir slow_out;
  LeaseguardRun slow;
  slow.result =
      run_process({victim("direct_calls")},
                  {{"LD_PRELOAD", std::string(LEASEGUARD_PRELOAD_PATH) + ":" + victim("libslow_coarse_clock.so")},
                   {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                   {"LEASEGUARD_SIM_DEVICES", "2"},
                   {"LEASEGUARD_OUT", slow_out.path()}});
  const std::string report_path = slow_out.path() + "/report.json";
  auto report = run_process({LEASEGUARD_BIN, "report", "--quiet", "--format", "json=" + report_path, slow_out.path()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(report_path), slow.json, error)) << error;
  expect_direct_calls_report(slow);
  EXPECT_EQ(slow.json["processes"][0]["event_time_resolution_ms"].as_number(), 0.0);
}

TEST(Victims, AContextHandleReusedForAnotherDeviceIsAskedAgain) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("context_reuse")}, {},
                                  {{"LEASEGUARD_SIM_DEVICES", "2"}, {"LEASEGUARD_SIM_REUSE_CONTEXTS", "1"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_NE(run.result.out.find("handle reused"), std::string::npos) << "the simulator did not reuse the handle";
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["bytes"].as_number(), 6000);
  EXPECT_EQ((*leaks[0])["device"].as_number(), 1);
  EXPECT_EQ(first_function(*leaks[0]), "leak_on");
}

// leaseguard keeps each thread's current context instead of asking the driver at every
// allocation: every way the thread's current context changes is seen, and each leak after a
// change is reported on the device of the context current then.
TEST(Victims, EveryChangeOfTheCurrentContextIsSeenByTheNextAllocation) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("context_switching")}, {},
                                  {{"LEASEGUARD_SIM_DEVICES", "2"}, {"LEASEGUARD_SIM_REUSE_CONTEXTS", "1"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_NE(run.result.out.find("handle reused by another thread"), std::string::npos)
      << "the simulator did not give the destroyed context's handle to the new one";
  const std::map<std::string, int> expected = {{"leak_in_primary_0", 0},           {"leak_after_set_current_1", 1},
                                               {"leak_after_push_0", 0},           {"leak_after_pop_1", 1},
                                               {"leak_after_legacy_push_0", 0},    {"leak_after_legacy_pop_1", 1},
                                               {"leak_after_create_0", 0},         {"leak_after_destroy_1", 1},
                                               {"leak_before_reset_1", 1},         {"leak_after_reset_1", 1},
                                               {"leak_in_other_thread_0", 0},      {"leak_after_other_thread_1", 1},
                                               {"leak_before_handle_reused_0", 0}, {"leak_after_handle_reused_1", 1}};
  std::map<std::string, int> device_of;
  for (const JsonValue *leak : all_leaks(run.json))
    device_of[first_function(*leak)] = static_cast<int>((*leak)["device"].as_number());
  EXPECT_EQ(device_of, expected);
}

// A destroyed context's handle given to a new context before the destroy hook has recorded
// the destroy: the leak made in the new context is not taken for one of the destroyed
// context's (which the report would list as gone with it, and then forget).
TEST(Victims, ALeakInANewContextMadeWhileADestroyOfItsHandleIsReturningIsReported) {
  TempDir out;
  auto run =
      run_under_leaseguard(out.path(), {victim("context_destroy_race")}, {},
                           {{"LEASEGUARD_SIM_REUSE_CONTEXTS", "1"}, {"LEASEGUARD_SIM_DESTROY_LINGER_MS", "2000"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_NE(run.result.out.find("handle reused before the destroy returned"), std::string::npos)
      << "the new context did not get the handle while the destroy was returning";
  std::map<std::string, std::string> ended_by_of = ended_by_of_first_functions(run.json);
  EXPECT_EQ(ended_by_of.size(), 2u);
  EXPECT_EQ(ended_by_of["leak_in_doomed_context"], "context_destroy");
  EXPECT_EQ(ended_by_of["leak_in_new_context"], "exit");
}

// A primary context destroyed by its last release and made again by another thread before
// the release hook asks whether it still exists: the hook finds it active, yet it is a new
// context (a new cuCtxGetId), so the destroy is recorded and the first primary's leak is
// reported as gone with it, not at exit as one the program still holds.
TEST(Victims, APrimaryContextMadeAgainWhileItsLastReleaseIsReturningWasStillDestroyed) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("primary_release_race")}, {},
                                  {{"LEASEGUARD_SIM_DESTROY_LINGER_MS", "2000"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_NE(run.result.out.find("primary made again before the release returned"), std::string::npos)
      << "the primary context was not made again while the release was returning";
  std::map<std::string, std::string> ended_by_of = ended_by_of_first_functions(run.json);
  EXPECT_EQ(ended_by_of.size(), 2u);
  EXPECT_EQ(ended_by_of["leak_in_first_primary"], "context_destroy");
  EXPECT_EQ(ended_by_of["leak_in_primary_made_again"], "exit");
}

TEST(Victims, DlopenAndDlsymOnTheHandle) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("dlopen_calls")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["bytes"].as_number(), 5000);
  EXPECT_EQ((*leaks[0])["api"].as_string(), "cuMemAlloc_v2");
  EXPECT_EQ(first_function(*leaks[0]), "leak_through_dlsym");
}

// The CUDA driver's entry points leaseguard hooks, from the table (core/base/entry_points.h).
const std::vector<std::string> kHookedNames = [] {
  std::vector<std::string> names;
  for (const EntryPoint &row : kEntryPoints)
    if (row.vendor == Vendor::Cuda) names.emplace_back(row.name);
  return names;
}();

TEST(Victims, ReplayOfEveryCudartLookupThroughCuGetProcAddress) {
  TempDir out;
  std::vector<std::string> command = {victim("proc_address_replay"),
                                      std::string(LEASEGUARD_TEST_DATA) + "/cudart-13.0-driver-lookups.tsv"};
  command.insert(command.end(), kHookedNames.begin(), kHookedNames.end());
  auto run = run_under_leaseguard(out.path(), command);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_NE(run.result.out.find("replayed 439 lookups"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find(", 0 mismatches"), std::string::npos) << run.result.out;
}

TEST(Victims, ReplayFailsWithoutThePreload) {
  // The replay's checks can fail: without leaseguard, no lookup comes back wrapped.
  std::vector<std::string> command = {victim("proc_address_replay"),
                                      std::string(LEASEGUARD_TEST_DATA) + "/cudart-13.0-driver-lookups.tsv"};
  command.insert(command.end(), kHookedNames.begin(), kHookedNames.end());
  auto result = run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
  EXPECT_EQ(result.exit_code, 1) << result.err;
}

void expect_threads_victims_leaks_and_counts(const LeaseguardRun &run) {
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 8u);
  std::set<double> threads;
  for (const auto *leak : leaks) {
    EXPECT_EQ((*leak)["bytes"].as_number(), 777);
    EXPECT_EQ(first_function(*leak), "leak_last_one");
    threads.insert((*leak)["thread"].as_number());
  }
  EXPECT_EQ(threads.size(), 8u);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_EQ(process["allocations"].as_number(), 8 * 200);
  EXPECT_EQ(process["frees"].as_number(), 8 * 199);
  EXPECT_EQ(process["unknown_frees"].as_number(), 0);
  EXPECT_NE(run.result.err.find("Direct leak of 6216 byte(s) in 8 allocation(s)"), std::string::npos) << run.result.err;
}

TEST(Victims, ThreadsWithCrossThreadFrees) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("threads")});
  expect_threads_victims_leaks_and_counts(run);
  EXPECT_EQ(run.json["processes"][0]["journal_mode"].as_string(), "full");
  EXPECT_EQ(run.json["processes"][0]["recycled_allocations"].as_number(), 0);
}

// Each worker writes an allocation it freed at once over with its next one while no other
// thread wrote after it, and counts them as it exits: the counts come out whole.
TEST(Victims, ACompactJournalReportsTheSameLeaksAndCountsFromThreads) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("threads")}, {"--journal", "compact"});
  expect_threads_victims_leaks_and_counts(run);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_EQ(process["journal_mode"].as_string(), "compact");
  EXPECT_GT(process["recycled_allocations"].as_number(), 0);
}

TEST(Victims, ForkAndExecEachReportTheirOwnLeaks) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("fork_child")}, {}, kForkedChildrenInherit);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue &processes = run.json["processes"];
  ASSERT_EQ(processes.size(), 3u) << read_text(out / "report.json");
  std::map<std::string, std::vector<double>> leaks_by_function;
  std::set<double> pids;
  for (const auto &process : processes.items()) {
    pids.insert(process["pid"].as_number());
    std::vector<double> bytes;
    for (const auto &lease : process["leases"].items())
      for (const auto &leak : lease["leaks"].items()) bytes.push_back(leak["bytes"].as_number());
    ASSERT_EQ(bytes.size(), 1u) << "each process leaks exactly its own allocation";
    EXPECT_TRUE(process["complete"].as_bool());
    EXPECT_EQ(process["exit"]["code"].as_number(), 0);
  }
  EXPECT_EQ(pids.size(), 3u);
  std::multiset<double> all;
  for (const auto *leak : all_leaks(run.json)) all.insert((*leak)["bytes"].as_number());
  EXPECT_EQ(all, (std::multiset<double>{3333, 4444, 5555}));
}

// As on the driver, a child forked after its parent initialized cannot allocate: the hook
// hands the driver's refusal (CUDA_ERROR_NOT_INITIALIZED) to the program as it came, and the
// child's report has nothing of its own nor of its parent's.
TEST(Victims, AChildThatTheDriverRefusesGetsTheRefusalAndRecordsNothing) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("fork_child")});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;  // the parent saw its child fail
  EXPECT_NE(run.result.err.find("cuMemAlloc_v2(&leaked, 4444) failed with 3"), std::string::npos) << run.result.err;
  const JsonValue &processes = run.json["processes"];
  ASSERT_EQ(processes.size(), 2u) << read_text(out / "report.json");
  std::multiset<double> all;
  for (const auto *leak : all_leaks(run.json)) all.insert((*leak)["bytes"].as_number());
  EXPECT_EQ(all, (std::multiset<double>{3333}));
  for (const auto &process : processes.items()) {
    EXPECT_TRUE(process["complete"].as_bool());
    if (process["exit"]["code"].as_number() == 3) {
      EXPECT_EQ(process["allocations"].as_number(), 0);
    }
  }
}

TEST(Victims, TtlExpiryReportsAtExpiryAndListsTheLateFree) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("ttl_expiry")}, {"--ttl", "1s"});
  if (run.result.exit_code == 77) GTEST_SKIP() << run.result.err;  // started after its lease had ended
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  const JsonValue *expired = lease_named(process, "process", "expiry");
  ASSERT_NE(expired, nullptr) << read_text(out / "report.json");
  EXPECT_EQ((*expired)["ttl_ms"].as_number(), 1000);
  ASSERT_EQ((*expired)["leaks"].size(), 1u);
  EXPECT_EQ((*expired)["leaks"][0]["bytes"].as_number(), 6000);
  EXPECT_EQ(first_function((*expired)["leaks"][0]), "allocate_before_expiry");
  const JsonValue *at_exit = lease_named(process, "process", "exit");
  ASSERT_NE(at_exit, nullptr);
  ASSERT_EQ((*at_exit)["leaks"].size(), 1u);
  EXPECT_EQ((*at_exit)["leaks"][0]["bytes"].as_number(), 7000);
  EXPECT_EQ(process["late_frees"].as_number(), 1);
}

void expect_killed_report(int signal_number) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("killed"), std::to_string(signal_number)});
  EXPECT_EQ(run.result.exit_code, 128 + signal_number);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_FALSE(process["complete"].as_bool());
  EXPECT_EQ(process["exit"]["signal"].as_number(), signal_number);
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 8u);
  for (const auto *leak : leaks) {
    EXPECT_EQ((*leak)["bytes"].as_number(), 1234);
    EXPECT_EQ(first_function(*leak), "leak_before_death");
  }
  EXPECT_EQ(process["leases"][0]["ended_by"].as_string(), "crash");
  EXPECT_NE(run.result.err.find("was killed by signal " + std::to_string(signal_number)), std::string::npos);
}

TEST(Victims, SigkillLeavesAJournalThatStillReportsTheLeaks) { expect_killed_report(9); }

// Each thread writes its records into a run of journal slots of its own: killed while every
// thread's run is half filled (none given up: the threads still run), the journal holds each
// completed allocation and nothing the report takes for damage.
TEST(Victims, SigkillWithEveryThreadsRunHalfFilledLosesNothing) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("killed"), "9", "threads"});
  EXPECT_EQ(run.result.exit_code, 128 + 9);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_FALSE(process["complete"].as_bool());
  std::map<double, int> by_bytes;
  for (const auto *leak : all_leaks(run.json)) ++by_bytes[(*leak)["bytes"].as_number()];
  EXPECT_EQ(by_bytes, (std::map<double, int>{{1234, 8}, {2000, 5}, {3000, 3}}));
  EXPECT_EQ(run.json["problems"].size(), 0u) << read_text(out / "report.json");
  EXPECT_GT(process["peak_between_threads_ms"].as_number(), 0) << "three threads allocated";
}
TEST(Victims, SigsegvLeavesAJournalThatStillReportsTheLeaks) { expect_killed_report(11); }

TEST(Victims, ExplicitLeasesThroughTheCAbi) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("leases")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  const JsonValue *inner = lease_named(process, "inner", "end");
  const JsonValue *request = lease_named(process, "request", "end");
  const JsonValue *whole = lease_named(process, "process", "exit");
  ASSERT_TRUE(inner && request && whole) << read_text(out / "report.json");
  ASSERT_EQ((*inner)["leaks"].size(), 1u);
  EXPECT_EQ((*inner)["leaks"][0]["bytes"].as_number(), 222);
  ASSERT_EQ((*request)["leaks"].size(), 1u);
  EXPECT_EQ((*request)["leaks"][0]["bytes"].as_number(), 111);
  ASSERT_EQ((*whole)["leaks"].size(), 1u);
  EXPECT_EQ((*whole)["leaks"][0]["bytes"].as_number(), 333);
  EXPECT_EQ(run.json["summary"]["leases"].as_number(), 3);
}

TEST(Victims, AnRtldNextInterposerKeepsWorkingInEitherPreloadOrder) {
  const std::string interposer = victim("libnext_interposer.so");
  for (const std::string &preload :
       {std::string(LEASEGUARD_PRELOAD_PATH) + ":" + interposer, interposer + ":" + LEASEGUARD_PRELOAD_PATH,
        std::string(LEASEGUARD_PRELOAD_PATH)}) {
    auto result = run_process({victim("next_interposer_main")}, {{"LD_PRELOAD", preload}});
    EXPECT_EQ(result.exit_code, 0) << preload << "\n" << result.err;
    EXPECT_EQ(result.out, "through the interposer\n");
  }
}

// What the driver queries decide in a report: each lease's ending and peak, each leak's
// size, entry point and device, and the summary's totals.
std::string whole(double number) { return std::to_string(static_cast<long long>(number)); }

// What was live at each lease's end, leaked or still reachable: whether a value left on a
// dead stack frame keeps an allocation reachable differs from run to run, not with a shim.
std::string shim_sensitive_facts(const JsonValue &json) {
  const JsonValue &summary = json["summary"];
  std::string facts =
      "leaked " + whole(summary["leaked_bytes"].as_number() + summary["reachable_bytes"].as_number()) + " in " +
      whole(summary["leaked_allocations"].as_number() + summary["reachable_allocations"].as_number()) + "\n";
  const JsonValue &leases = json["processes"][0]["leases"];
  for (size_t i = 0; i < leases.size(); ++i) {
    const JsonValue &lease = leases[i];
    facts += lease["name"].as_string() + " ended by " + lease["ended_by"].as_string() + ", peak " +
             whole(lease["peak_bytes"].as_number()) + ":";
    std::vector<std::string> leaks;
    for (size_t j = 0; j < lease["leaks"].size(); ++j) {
      const JsonValue &leak = lease["leaks"][j];
      leaks.push_back(" " + whole(leak["bytes"].as_number()) + " " + leak["api"].as_string() + " on " +
                      whole(leak["device"].as_number()));
    }
    std::sort(leaks.begin(), leaks.end());
    for (const std::string &leak : leaks) facts += leak;
    facts += "\n";
  }
  return facts;
}

// A HAMi-style shim preloaded after leaseguard (so that the hooks forward to it), reaching
// the driver with dlsym(RTLD_NEXT) or through its own dlopen handle: the report is the one
// made without it. Its dlopen lookups must get the driver's functions (a wrapper sent them
// back into the hooks until the stack overflowed), and the driver's queries must be asked
// of the driver (the shim has none: devices read -1, context destroys went unseen).
TEST(Victims, AShimBetweenLeaseguardAndTheDriverChangesNothingInTheReport) {
  TempDir plain_out;
  const std::map<std::string, std::string> two_devices = {{"LEASEGUARD_SIM_DEVICES", "2"}};
  auto plain = run_under_leaseguard(plain_out.path(), {victim("behind_shim")}, {}, two_devices);
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  const std::string expected = shim_sensitive_facts(plain.json);
  // The victim's four cases, so that an empty report cannot pass.
  EXPECT_EQ(expected,
            "leaked 11110 in 4\n"
            "process ended by context_destroy, peak 3333: 2222 cuMemAlloc_v2 on 0\n"
            "process ended by context_destroy, peak 4444: 3333 cuMemAlloc_v2 on 1\n"
            "process ended by exit, peak 5555: 1111 cuMemAlloc_v2 on 1 4444 cuMemAllocAsync on 0\n");
  // Every family too, pools destroyed with memory outstanding among them (pool queries).
  TempDir families_out;
  auto families = run_under_leaseguard(families_out.path(), {victim("resource_families")}, {}, kForkedChildrenInherit);
  ASSERT_EQ(families.result.exit_code, 0) << families.result.err;
  const std::string families_expected = shim_sensitive_facts(families.json);
  for (const char *shim : {"libbehind_shim_rtld_next.so", "libbehind_shim_dlopen.so"}) {
    TempDir out;
    std::map<std::string, std::string> environment = two_devices;
    environment["LD_PRELOAD"] = victim(shim);
    // The user's LD_PRELOAD is leaseguard's own too: under the asan preset the CLI is built
    // with ASan, whose runtime then would not come first. Only the CLI is told to accept it.
    const char *asan_options = std::getenv("ASAN_OPTIONS");
    environment["ASAN_OPTIONS"] =
        std::string(asan_options != nullptr && *asan_options != '\0' ? std::string(asan_options) + ":" : "") +
        "verify_asan_link_order=0";
    auto run = run_under_leaseguard(out.path(), {victim("behind_shim")}, {}, environment);
    ASSERT_EQ(run.result.exit_code, 0) << shim << "\n" << run.result.err;
    EXPECT_EQ(shim_sensitive_facts(run.json), expected) << shim;
    TempDir shimmed_families_out;
    auto shimmed_families = run_under_leaseguard(
        shimmed_families_out.path(), {victim("resource_families")}, {},
        {{"LD_PRELOAD", victim(shim)}, {"ASAN_OPTIONS", environment["ASAN_OPTIONS"]}, *kForkedChildrenInherit.begin()});
    ASSERT_EQ(shimmed_families.result.exit_code, 0) << shim << "\n" << shimmed_families.result.err;
    EXPECT_EQ(shim_sensitive_facts(shimmed_families.json), families_expected) << shim;
    EXPECT_EQ(shimmed_families.json["processes"][0]["pools_destroyed_in_use"].size(),
              families.json["processes"][0]["pools_destroyed_in_use"].size())
        << shim;
  }
}

TEST(Victims, CudartStaticLookupsComeBackWrappedAndItsAllocationIsRecorded) {
  if (!LEASEGUARD_HAVE_TOOLKIT) GTEST_SKIP() << "no CUDA Toolkit on this machine";
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("cudart_static")}, {}, {{"LEASEGUARD_LOG", "debug"}});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("cudaMalloc: cudaSuccess (0)"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("driver version seen by the runtime: 13000"), std::string::npos) << run.result.out;
  ASSERT_EQ(run.json["processes"].size(), 1u);
  EXPECT_EQ(run.json["processes"][0]["allocations"].as_number(), 1) << run.result.err;
  EXPECT_EQ(run.json["processes"][0]["frees"].as_number(), 1) << run.result.err;
  EXPECT_TRUE(all_leaks(run.json).empty());
  for (const char *wrapped : {"cuGetProcAddress(cuGetProcAddress, 12000, 0) -> cuGetProcAddress_v2 wrapped",
                              "cuGetProcAddress(cuMemAlloc, 3020, 0) -> cuMemAlloc_v2 wrapped",
                              "cuGetProcAddress(cuMemFree, 3020, 0) -> cuMemFree_v2 wrapped",
                              "cuGetProcAddress(cuMemAllocAsync, 11020, 0) -> cuMemAllocAsync wrapped",
                              "cuGetProcAddress(cuMemHostAlloc, 2020, 0) -> cuMemHostAlloc wrapped",
                              "cuGetProcAddress(cuDevicePrimaryCtxReset, 7000, 0) -> cuDevicePrimaryCtxReset wrapped"})
    EXPECT_NE(run.result.err.find(wrapped), std::string::npos) << wrapped << "\n" << run.result.err;
}

TEST(Victims, DisableIsPurePassThrough) {
  TempDir out;
  auto result = run_process({victim("threads")}, {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                                  {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                                  {"LEASEGUARD_DISABLE", "1"},
                                                  {"LEASEGUARD_OUT", out.path()}});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "threads done\n");
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(std::filesystem::is_empty(out.path()));
}

TEST(Victims, UnwritableOutputGivesOneWarningAndTheProgramRuns) {
  auto result = run_process({victim("threads")}, {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                                  {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                                  {"LEASEGUARD_OUT", "/proc/leaseguard-cannot-write-here"}});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "threads done\n");
  size_t lines = std::count(result.err.begin(), result.err.end(), '\n');
  EXPECT_EQ(lines, 1u) << result.err;
  EXPECT_NE(result.err.find("continuing without recording"), std::string::npos);
}

TEST(Victims, BadEnvironmentValuesWarnAndUseDefaults) {
  TempDir out;
  auto result = run_process({victim("threads")}, {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                                  {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                                  {"LEASEGUARD_OUT", out.path()},
                                                  {"LEASEGUARD_STACK_DEPTH", "-4"},
                                                  {"LEASEGUARD_TTL", "soon"}});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.err.find("LEASEGUARD_STACK_DEPTH='-4' is not valid; using 16"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("LEASEGUARD_TTL='soon' is not valid; using no time-to-live"), std::string::npos);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Reclaim, ALeaseEndedWithPolicyReclaimGivesEveryFamilyBack) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("lease_reclaim"), "reclaim"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  const JsonValue *job = lease_named(run.json["processes"][0], "job", "end");
  ASSERT_NE(job, nullptr) << read_text(out / "report.json");
  EXPECT_EQ((*job)["policy"].as_string(), "reclaim");
  ASSERT_EQ((*job)["leaks"].size(), 4u);
  std::set<std::string> apis;
  for (const auto &leak : (*job)["leaks"].items()) {
    EXPECT_TRUE(leak["reclaimed"].as_bool()) << leak["api"].as_string();
    EXPECT_EQ(first_function(leak), "allocate_everything");
    apis.insert(leak["api"].as_string());
  }
  EXPECT_EQ(apis, (std::set<std::string>{"cuMemAlloc_v2", "cuMemAlloc", "cuMemAllocHost_v2", "cuMemAllocAsync"}));
  ASSERT_EQ((*job)["late_frees"].size(), 4u);
  for (const auto &late : (*job)["late_frees"].items()) {
    EXPECT_FALSE(late["forwarded"].as_bool());
    EXPECT_EQ(late["stack"][0]["function"].as_string(), "main");
  }
  EXPECT_NE(run.result.err.find("reclaimed memory: not passed to the driver"), std::string::npos);
}

TEST(Reclaim, TtlExpiryWithReclaimAndTheLateFreeThatFollows) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("ttl_expiry")}, {"--ttl", "1s", "--on-expiry", "reclaim"});
  if (run.result.exit_code == 77) GTEST_SKIP() << run.result.err;  // started after its lease had ended
  // The program frees its buffer after the expiry reclaimed it: it must still succeed.
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  const JsonValue *expired = lease_named(process, "process", "expiry");
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ((*expired)["policy"].as_string(), "reclaim");
  ASSERT_EQ((*expired)["leaks"].size(), 1u);
  EXPECT_TRUE((*expired)["leaks"][0]["reclaimed"].as_bool());
  ASSERT_EQ((*expired)["late_frees"].size(), 1u);
  EXPECT_FALSE((*expired)["late_frees"][0]["forwarded"].as_bool());
  EXPECT_EQ((*expired)["late_frees"][0]["api"].as_string(), "cuMemFree_v2");
  EXPECT_EQ(process["late_frees"].as_number(), 1);
}

TEST(Reclaim, PolicyAbortWritesTheReportThenAborts) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("lease_reclaim"), "abort"});
  EXPECT_EQ(run.result.exit_code, 128 + 6);
  const JsonValue *job = lease_named(run.json["processes"][0], "job", "end");
  ASSERT_NE(job, nullptr) << read_text(out / "report.json");
  EXPECT_EQ((*job)["policy"].as_string(), "abort");
  EXPECT_EQ((*job)["leaks"].size(), 4u);
}

TEST(Reclaim, TtlExpiryWithAbort) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("ttl_expiry")}, {"--ttl", "1s", "--on-expiry", "abort"});
  if (run.result.exit_code == 77) GTEST_SKIP() << run.result.err;  // started after its lease had ended
  EXPECT_EQ(run.result.exit_code, 128 + 6);
  const JsonValue *expired = lease_named(run.json["processes"][0], "process", "expiry");
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ((*expired)["leaks"].size(), 1u);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

// One C ABI shim for both front ends (core/session/c_abi.h): the preload's exports and the
// API library's answer alike, recording or not.
TEST(CAbi, BothFrontEndsAnswerAlike) {
  for (const char *program : {"c_abi_answers", "c_abi_answers_api"}) {
    SCOPED_TRACE(program);
    TempDir out;
    auto recording =
        run_process({victim(program)}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", out.path()}});
    EXPECT_EQ(recording.exit_code, 0) << recording.err;
    EXPECT_EQ(recording.out, "lease begun, enter 0, leave 0, leave again -1, end 0\n");
    auto disabled = run_process(
        {victim(program)},
        {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", out.path()}, {"LEASEGUARD_DISABLE", "1"}});
    EXPECT_EQ(disabled.exit_code, 0) << disabled.err;
    EXPECT_EQ(disabled.out, "lease none, enter 0, leave 0, leave again 0, end 0\n");
  }
}

TEST(Annotate, NoOpsWithoutThePreload) {
  auto result = run_process({victim("annotated")}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "lease none, enter 0, leave 0, end 0\n");
}

TEST(Annotate, RealLeasesUnderThePreload) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("annotated")});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.out, "lease begun, enter 0, leave 0, end 1\n");
  const JsonValue *lease = lease_named(run.json["processes"][0], "annotated", "end");
  ASSERT_NE(lease, nullptr);
  ASSERT_EQ((*lease)["leaks"].size(), 1u);
  EXPECT_EQ((*lease)["leaks"][0]["bytes"].as_number(), 4321);
  EXPECT_EQ(first_function((*lease)["leaks"][0]), "leak_in_scope");
}

// The GoogleTest listener: each test its own lease; the test that leaked fails, at its own
// file and line; under --suppressions a leak the report silences fails nothing.
TEST(GtestListener, TheLeakingTestFailsAtItsOwnLineAndASuppressedLeakFailsNothing) {
  TempDir dir;
  auto run = run_under_leaseguard(dir / "plain", {victim("gtest_leases")});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.out;  // GoogleTest's: a test failed
  EXPECT_NE(run.result.out.find("[  FAILED  ] Listener.Leaks"), std::string::npos) << run.result.out;
  EXPECT_EQ(run.result.out.find("[  FAILED  ] Listener.Clean"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("gtest_leases.cpp:15: Failure"), std::string::npos)
      << run.result.out;  // TEST(Listener, Leaks)
  EXPECT_EQ(run.result.out.find("gtest.hpp"), std::string::npos) << run.result.out;
  const JsonValue &process = run.json["processes"][0];
  const JsonValue *leaks = lease_named(process, "Listener.Leaks", "end");
  ASSERT_NE(leaks, nullptr) << run.result.err;
  ASSERT_EQ((*leaks)["leaks"].size(), 1u);
  EXPECT_EQ((*leaks)["leaks"][0]["bytes"].as_number(), 4321);
  const JsonValue *clean = lease_named(process, "Listener.Clean", "end");
  ASSERT_NE(clean, nullptr);
  EXPECT_EQ((*clean)["leaks"].size(), 0u);
  // The workspace a global keeps: reachable in the report, and no failure in GoogleTest.
  EXPECT_EQ(run.result.out.find("[  FAILED  ] Listener.FillsAWorkspace"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("[       OK ] Listener.FillsAWorkspace"), std::string::npos) << run.result.out;
  const JsonValue *workspace = lease_named(process, "Listener.FillsAWorkspace", "end");
  ASSERT_NE(workspace, nullptr);
  ASSERT_EQ((*workspace)["leaks"].size(), 1u);
  EXPECT_EQ((*workspace)["leaks"][0]["reachability"].as_string(), "reachable");
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 1);  // Listener.Leaks's, as GoogleTest says

  std::ofstream(dir / "known.supp") << "leak:^leak_in_test$\n";
  auto suppressed = run_under_leaseguard(dir / "suppressed", {victim("gtest_leases")},
                                         {"--suppressions", dir / "known.supp", "--fail-on-leak"});
  EXPECT_EQ(suppressed.result.exit_code, 0) << suppressed.result.out << suppressed.result.err;
  EXPECT_EQ(suppressed.result.out.find("[  FAILED  ]"), std::string::npos) << suppressed.result.out;
  EXPECT_EQ(suppressed.json["summary"]["suppressed_allocations"].as_number(), 1);
}

TEST(Watchdog, NoThreadUnlessALeaseHasADeadline) {
  // threads.c joins its workers, then lists the threads the process still has: the watchdog
  // ("leaseguard-ttl") is among them only where a lease has a deadline.
  for (const bool ttl : {false, true}) {
    std::map<std::string, std::string> environment = {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                                      {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                                      {"LEASEGUARD_OUT", TempDir().path()}};
    if (ttl) environment["LEASEGUARD_TTL"] = "1h";
    auto result = run_process({victim("threads"), "names"}, environment);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    ASSERT_NE(result.out.find("thread: threads\n"), std::string::npos) << result.out;  // the listing works
    EXPECT_EQ(result.out.find("thread: leaseguard-ttl\n") != std::string::npos, ttl) << result.out;
  }
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Deadline, AnAbsoluteDeadlineEndsTheProcessLease) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char deadline[64];
  // 2 s from now; ttl_expiry waits for the lease to end after its first allocation.
  long long nanoseconds = static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec + 2000000000LL;
  std::snprintf(deadline, sizeof deadline, "@%lld.%09lld", nanoseconds / 1000000000LL, nanoseconds % 1000000000LL);
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("ttl_expiry")}, {}, {{"LEASEGUARD_DEADLINE", deadline}});
  if (run.result.exit_code == 77) GTEST_SKIP() << run.result.err;  // started after its lease had ended
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue *expired = lease_named(run.json["processes"][0], "process", "expiry");
  ASSERT_NE(expired, nullptr) << read_text(out / "report.json");
  ASSERT_EQ((*expired)["leaks"].size(), 1u);
  EXPECT_EQ((*expired)["leaks"][0]["bytes"].as_number(), 6000);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

const JsonValue *lease_named(const JsonValue &process, const std::string &name) {
  for (const auto &lease : process["leases"].items())
    if (lease["name"].as_string() == name) return &lease;
  return nullptr;
}

// A service that frees everything in its SIGTERM handler and exits 0 is reported clean: the
// signal ends no lease (schedulers send SIGTERM to start a graceful shutdown), its frees are
// ordinary frees, and --fail-on-leak passes. The signal's arrival is in the report.
TEST(Signals, AGracefulSigtermHandlerThatFreesEverythingLeavesNoLeak) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("terminated"), "handler"}, {"--fail-on-leak"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, "handler ran\n");
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0) << read_text(out / "report.json");
  const JsonValue &process = run.json["processes"][0];
  EXPECT_TRUE(process["complete"].as_bool());
  for (const auto &lease : process["leases"].items()) {
    EXPECT_EQ(lease["ended_by"].as_string(), "exit") << lease["name"].as_string();
    EXPECT_EQ(lease["late_frees"].size(), 0u) << lease["name"].as_string();
  }
  ASSERT_EQ(process["signals"].size(), 1u);
  EXPECT_EQ(process["signals"][0]["signal"].as_number(), 15);
  EXPECT_TRUE(process["signals"][0]["handled"].as_bool());
  EXPECT_EQ(run.result.err.find("detected device memory leaks"), std::string::npos) << run.result.err;
}

// Left to its default action, SIGTERM kills the process: the report says so and lists what
// was live at death, from the journal, in the leases that held it.
TEST(Signals, ASigtermDefaultActionIsADeathReportedFromTheJournal) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("terminated"), "default"});
  EXPECT_EQ(run.result.exit_code, 128 + 15);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_FALSE(process["complete"].as_bool());
  EXPECT_EQ(process["exit"]["signal"].as_number(), 15);
  const JsonValue *job = lease_named(process, "job");
  ASSERT_NE(job, nullptr) << read_text(out / "report.json");
  EXPECT_EQ((*job)["ended_by"].as_string(), "crash");
  EXPECT_EQ((*job)["signal"].as_number(), 15);
  ASSERT_EQ((*job)["leaks"].size(), 1u);
  EXPECT_EQ((*job)["leaks"][0]["bytes"].as_number(), 8888);
  EXPECT_EQ(first_function((*job)["leaks"][0]), "allocate_buffer");
  ASSERT_EQ(process["signals"].size(), 1u);
  EXPECT_FALSE(process["signals"][0]["handled"].as_bool());
  EXPECT_NE(run.result.err.find("was killed by signal 15"), std::string::npos) << run.result.err;
  EXPECT_NE(run.result.err.find("signal 15 arrived at"), std::string::npos) << run.result.err;
}

TEST(Signals, SigintDefaultAction) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("terminated"), "sigint"});
  EXPECT_EQ(run.result.exit_code, 128 + 2);
  const JsonValue *job = lease_named(run.json["processes"][0], "job");
  ASSERT_NE(job, nullptr) << read_text(out / "report.json");
  EXPECT_EQ((*job)["ended_by"].as_string(), "crash");
  EXPECT_EQ((*job)["signal"].as_number(), 2);
}

TEST(Signals, AnIgnoredSignalEndsNothing) {
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("terminated"), "ignored"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.out, "ignored\n");
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0);
  for (const auto &lease : run.json["processes"][0]["leases"].items()) EXPECT_TRUE(lease["signal"].is_null());
  EXPECT_EQ(run.json["processes"][0]["signals"].size(), 0u);
}

TEST(Signals, SameBehaviourWithoutThePreload) {
  for (const char *mode : {"handler", "default", "ignored", "sigint"}) {
    TempDir out;
    auto plain = run_process({victim("terminated"), mode}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
    auto preloaded = run_process({victim("terminated"), mode}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                                                {"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                                                {"LEASEGUARD_OUT", out.path()}});
    EXPECT_EQ(preloaded.exit_code, plain.exit_code) << mode;
    EXPECT_EQ(preloaded.out, plain.out) << mode;
  }
}

}  // namespace
}  // namespace leaseguard::testing
