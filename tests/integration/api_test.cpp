// The C++ API in whole programs (examples/api/, tests/victims/api_exit_drop.cpp): under the
// preload it shares the preload's core (one record per allocation), without it it runs its
// own, and handles dropped at exit are harmless either way.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

std::string example(const std::string &name) { return std::string(LEASEGUARD_EXAMPLES) + "/" + name; }

const JsonValue *lease_named(const JsonValue &report, const std::string &name) {
  for (const auto &process : report["processes"].items())
    for (const auto &lease : process["leases"].items())
      if (lease["name"].as_string() == name) return &lease;
  return nullptr;
}

TEST(ApiUnderThePreload, EachAllocationIsRecordedOnce) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {example("api_vector_add")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("leaked: 0"), std::string::npos);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_EQ(process["allocations"].as_number(), 3);  // not 6: the API's driver calls bypass the hooks
  EXPECT_EQ(process["frees"].as_number(), 3);
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0);
}

TEST(ApiUnderThePreload, OnlyTheRawPointerLeaks) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {example("api_early_return")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_NE((*leaks[0])["stack"][0]["function"].as_string().find("upload_raw"), std::string::npos);
}

TEST(ApiUnderThePreload, AnExpiredSessionIsReclaimedAndItsLateDropsAreQuiet) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {example("api_ttl_session")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue *job = lease_named(run.json, "job-42");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ((*job)["ended_by"].as_string(), "expiry");
  EXPECT_EQ((*job)["leaks"].size(), 4u);
  for (const auto &leak : (*job)["leaks"].items()) {
    EXPECT_TRUE(leak["reclaimed"].as_bool());
    EXPECT_EQ(leak["stack"][0]["function"].as_string(), "main");  // the program's call, not the API's insides
  }
  EXPECT_EQ((*job)["late_frees"].size(), 0u);  // handles letting go after a reclaim are expected
}

// Each leak's stack names its own caller, from one call into the API reached through two
// callers in turn (the same start each time), with the preload's core and with the API's own.
void expect_two_callers_each_their_own(const JsonValue &json) {
  const JsonValue *lease = lease_named(json, "two-callers");
  ASSERT_NE(lease, nullptr);
  ASSERT_EQ((*lease)["leaks"].size(), 100u);
  std::map<std::string, int> by_caller;
  for (const auto &leak : (*lease)["leaks"].items()) {
    EXPECT_NE(leak["stack"][0]["function"].as_string().find("allocate_here"), std::string::npos);
    const std::string caller = leak["stack"][1]["function"].as_string();
    const uint64_t bytes = static_cast<uint64_t>(leak["bytes"].as_number());
    EXPECT_EQ(bytes, caller.find("through_a") != std::string::npos ? 100u : 200u) << caller;
    EXPECT_EQ(leak["stack"][2]["function"].as_string(), "main");
    ++by_caller[caller];
  }
  ASSERT_EQ(by_caller.size(), 2u);
  for (const auto &[caller, count] : by_caller) EXPECT_EQ(count, 50) << caller;
}

TEST(ApiUnderThePreload, EachLeaksStackBeginsAtItsOwnCallFromTwoPlacesInTurn) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("api_two_callers")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  expect_two_callers_each_their_own(run.json);
}

// Runs `program` without the preload, so that the API records into its own core, then
// reports the journals it left in `dir` as JSON.
void run_without_the_preload(const TempDir &dir, const std::string &program, JsonValue &json) {
  auto direct =
      run_process({program}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", dir.path()}}, {"LD_PRELOAD"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  auto report = run_process({LEASEGUARD_BIN, "report", "--format", "json=" + (dir / "report.json"), dir.path()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "report.json"), json, error)) << error;
}

TEST(ApiWithoutThePreload, EachLeaksStackBeginsAtItsOwnCallFromTwoPlacesInTurn) {
  TempDir dir;
  JsonValue json;
  ASSERT_NO_FATAL_FAILURE(run_without_the_preload(dir, victim("api_two_callers"), json));
  expect_two_callers_each_their_own(json);
}

TEST(ApiWithoutThePreload, RecordsIntoItsOwnCore) {
  TempDir dir;
  JsonValue json;
  ASSERT_NO_FATAL_FAILURE(run_without_the_preload(dir, example("api_ttl_session"), json));
  const JsonValue *job = lease_named(json, "job-42");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ((*job)["leaks"].size(), 4u);
  for (const auto &leak : (*job)["leaks"].items()) EXPECT_TRUE(leak["reclaimed"].as_bool());
}

// Without the preload, the API's own core must see dlclose as the preload does: a plugin
// loaded where an unloaded one was is walked and named as itself.
TEST(ApiWithoutThePreload, APluginLoadedWhereAnUnloadedOneWasIsNamedAsItself) {
  TempDir dir;
  auto direct = run_process({victim("api_dlclose_leak"), victim("libapi_plugin.so"), victim("libapi_plugin_b.so")},
                            {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", dir.path()}}, {"LD_PRELOAD"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  // The case under test: the loader reused the addresses.
  ASSERT_NE(direct.out.find("same addresses"), std::string::npos) << direct.out;
  auto report = run_process({LEASEGUARD_BIN, "report", "--format", "json=" + (dir / "report.json"), dir.path()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  JsonValue json;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "report.json"), json, error)) << error;
  auto named = first_functions_and_modules(all_leaks(json));
  ASSERT_EQ(named.size(), 2u);
  ASSERT_EQ(named.count("leak_in_api_plugin"), 1u);
  ASSERT_EQ(named.count("leak_in_second_api_plugin"), 1u);
  EXPECT_NE(named.find("leak_in_api_plugin")->second.find("libapi_plugin.so"), std::string::npos);
  EXPECT_NE(named.find("leak_in_second_api_plugin")->second.find("libapi_plugin_b.so"), std::string::npos);
}

TEST(ApiExitDrops, HandlesDroppedAtExitWithAndWithoutThePreload) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("api_exit_drop")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  std::map<std::string, double> leaks, late_frees;
  for (const auto &process : run.json["processes"].items())
    for (const auto &lease : process["leases"].items()) {
      leaks[lease["name"].as_string()] += lease["leaks"].size();
      late_frees[lease["name"].as_string()] += lease["late_frees"].size();
    }
  EXPECT_EQ(leaks["reclaiming"], 1);
  EXPECT_EQ(late_frees["reclaiming"], 0);  // its handle's drop at exit was expected
  EXPECT_EQ(leaks["reporting"], 1);
  EXPECT_EQ(late_frees["reporting"], 1);  // reported, then freed by the handle at exit
  // The open session's handle went with the static destructors, before the process lease
  // ended: no leak.
  EXPECT_EQ(leaks["never-ended"], 0);
  TempDir alone;
  auto direct =
      run_process({victim("api_exit_drop")},
                  {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", alone.path()}}, {"LD_PRELOAD"});
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_NE(direct.out.find("exiting with three handles alive"), std::string::npos);
}

// A child forked while its parent's session holds a handle goes on with that session (on a
// device that lets it: the simulator told to, kForkedChildrenInherit): what it
// allocates there and drops is its leak, counted by end() and reclaimed (as without fork:
// tests/victims/api_fork_child.cpp), and the parent's handle, which the child's memory
// copies but the child never allocated, is not the child's. The parent's session is untouched.
TEST(ApiFork, AForkedChildsSessionAccountsItsOwnAllocationsAndLeavesTheParentsAlone) {
  TempDir alone, forked;
  auto without_fork = run_under_leaseguard(alone.path(), {victim("api_fork_child"), "nofork"});
  ASSERT_EQ(without_fork.result.exit_code, 0) << without_fork.result.err;
  EXPECT_EQ(without_fork.result.out, "child end: 2\n");  // its own drop and the kept handle
  auto run = run_under_leaseguard(forked.path(), {victim("api_fork_child")}, {}, kForkedChildrenInherit);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("child end: 1\n"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("parent end: 0\n"), std::string::npos) << run.result.out;
  ASSERT_EQ(run.json["processes"].size(), 2u) << run.result.err;
  std::set<double> pids;
  for (const auto &process : run.json["processes"].items()) pids.insert(process["pid"].as_number());
  std::map<std::string, std::vector<double>> reclaimed_by_process;  // "parent"/"child" -> bytes
  for (const auto &process : run.json["processes"].items()) {
    const std::string who = pids.count(process["ppid"].as_number()) != 0 ? "child" : "parent";
    EXPECT_TRUE(process["complete"].as_bool()) << who;
    bool session_ended = false;
    for (const auto &lease : process["leases"].items()) {
      if (lease["name"].as_string() != "parent") continue;
      EXPECT_EQ(lease["ended_by"].as_string(), "end") << who;
      session_ended = true;
      for (const auto &leak : lease["leaks"].items()) {
        EXPECT_TRUE(leak["reclaimed"].as_bool()) << who;
        reclaimed_by_process[who].push_back(leak["bytes"].as_number());
      }
    }
    EXPECT_TRUE(session_ended) << who << ": the session's lease ends in each process";
  }
  EXPECT_EQ(reclaimed_by_process["child"], std::vector<double>{1000});
  EXPECT_TRUE(reclaimed_by_process["parent"].empty());
}

}  // namespace
}  // namespace leaseguard::testing
