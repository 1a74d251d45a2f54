// The hooks under unusual and buggy calls (tests/victims/robustness.c): NULL
// out-parameters, zero sizes, frees of NULL, double frees, interior frees, mixed generations,
// a driver re-entering its own exports, a signal handler that allocates, and exit() while
// other threads allocate. The program must behave exactly as without leaseguard, and the
// report must say what happened.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

std::vector<std::string> functions_of(const JsonValue &stack) {
  std::vector<std::string> names;
  for (const auto &frame : stack.items())
    names.push_back(frame["function"].is_null() ? "" : frame["function"].as_string());
  return names;
}

bool has(const std::vector<std::string> &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// In a child about to run a program: makes `out` a tmpfs of `size` (64 KiB by default) in a
// mount namespace of the child's own, or exits 77 where mounting is not allowed.
void mount_a_small_file_system_at(const std::string &out, const std::string &size = "64k") {
  const std::string options = "size=" + size + ",mode=0700";  // a private output directory
  if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mkdir(out.c_str(), 0700) != 0 || mount("tmpfs", out.c_str(), "tmpfs", 0, options.c_str()) != 0)
    _exit(77);
}

// A journal on a file system that fills up (here a 64 KiB tmpfs, mounted in the program's
// own mount namespace) must not kill the program with SIGBUS: leaseguard stops recording
// and says so once.
TEST(Robustness, AFileSystemThatFillsUpUnderTheJournalDoesNotKillTheProgram) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  auto result = run_process_with_setup(
      {victim("threads")},
      {{"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH}, {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}, {"LEASEGUARD_OUT", out}},
      [&] { mount_a_small_file_system_at(out); });
  if (result.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "threads done\n");
  EXPECT_NE(result.err.find("cannot grow the journal"), std::string::npos) << result.err;
}

// The same under `leaseguard run`: the output directory is too full even for the exit
// statuses it keeps for later reports. The command's exit status stays the program's, and
// the report, made from what the run knows, still says how the program ended.
TEST(Robustness, RunOnAFullFileSystemExitsWithTheProgramsStatus) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  auto result = run_process_with_setup({LEASEGUARD_BIN, "run", "--sim", "--out", out, "--", victim("threads")}, {},
                                       [&] { mount_a_small_file_system_at(out); });
  if (result.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "threads done\n");
  EXPECT_NE(result.err.find("cannot grow the journal"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("could not grow"), std::string::npos) << result.err;  // the report says so
  EXPECT_NE(result.err.find("exited with code 0"), std::string::npos) << result.err;
  // Each of the eight threads leaks its last allocation, journaled or not.
  EXPECT_NE(result.err.find("leaked in 8 allocation(s)."), std::string::npos) << result.err;
}

// A report that does not fit where it is written is an error, and is not left behind half
// written for a CI system to read as the report (here a JSON report of eight leaks on a
// one-page tmpfs; the child lists what is left there before its mount namespace goes).
TEST(Robustness, AReportThatDoesNotFitIsRemovedNotLeftHalfWritten) {
  TempDir dir;
  ASSERT_EQ(run_process({LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", dir / "journals", "--", victim("threads")})
                .exit_code,
            0);
  const std::string out = dir.path() + "/small";
  const std::string report = out + "/report.json";
  auto result =
      run_process_with_setup({"/bin/sh", "-c",
                              std::string(LEASEGUARD_BIN) + " report --quiet --format json=" + report + " " +
                                  (dir / "journals") + "; status=$?; echo left: $(ls -A " + out + "); exit $status"},
                             {}, [&] { mount_a_small_file_system_at(out, "4k"); });
  if (result.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err, "leaseguard: error: cannot write " + report + ": No space left on device\n");
  EXPECT_EQ(result.out, "left:\n");
}

TEST(Robustness, UnusualCallsGetTheDriversAnswerAndTheReportSaysWhatHappened) {
  auto plain = run_process({victim("robustness"), "calls"}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("robustness"), "calls"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);  // every status, as the driver gave it
  EXPECT_NE(plain.out.find("pointer untouched: 1"), std::string::npos);
  // Only the allocation whose interior was "freed" leaks: the driver refused that free.
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["bytes"].as_number(), 2222);
  // The double free is reported with the stack that freed twice.
  const JsonValue &process = run.json["processes"][0];
  ASSERT_EQ(process["double_frees"].size(), 1u);
  const JsonValue &twice = process["double_frees"][0];
  EXPECT_EQ(twice["api"].as_string(), "cuMemFree_v2");
  EXPECT_LE(twice["first_freed_ms"].as_number(), twice["time_ms"].as_number());
  EXPECT_TRUE(has(functions_of(twice["stack"]), "calls"));
  EXPECT_NE(run.result.err.find("Double free of "), std::string::npos) << run.result.err;
  // The interior free is an unknown free, not a double free; frees of NULL are not recorded.
  EXPECT_EQ(process["unknown_frees"].as_number(), 2);
}

TEST(Robustness, ADriverCallingItsOwnExportsIsRecordedOnce) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("robustness"), "reenter"}, {},
                                  {{"LEASEGUARD_SIM_REENTER", "1"}, {"LD_DEBUG", "bindings"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  // The driver's inner call did reach leaseguard's cuMemAlloc_v2...
  EXPECT_NE(run.result.err.find("libcuda.so.1 [0] to " + std::string(LEASEGUARD_PRELOAD_PATH) +
                                " [0]: normal symbol `cuMemAlloc_v2'"),
            std::string::npos);
  // ...and was forwarded without a second record.
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["api"].as_string(), "cuMemAllocManaged");
  EXPECT_EQ((*leaks[0])["bytes"].as_number(), 3333);
}

TEST(Robustness, ASignalHandlerThatAllocatesIsRecordedWithTheInterruptedStack) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("robustness"), "signal"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 3u);
  for (const JsonValue *leak : leaks) {
    EXPECT_EQ((*leak)["bytes"].as_number(), 4321);
    auto names = functions_of((*leak)["stack"]);
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names[0], "allocate_in_handler");
    EXPECT_TRUE(has(names, "signal_allocates")) << "the stack stops at the signal frame";
  }
}

TEST(Robustness, ExitWhileOtherThreadsAllocate) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("robustness"), "exit_race"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("exiting while threads allocate"), std::string::npos);
  const JsonValue &process = run.json["processes"][0];
  EXPECT_TRUE(process["complete"].as_bool());
  std::map<double, int> by_size;
  for (const JsonValue *leak : all_leaks(run.json)) ++by_size[(*leak)["bytes"].as_number()];
  EXPECT_EQ(by_size[5555], 4);  // each thread's deliberate leak
  EXPECT_LE(by_size[100], 4);   // at most one in flight per thread when exit() came
  EXPECT_EQ(by_size.size(), by_size.count(100) + 1);
}

TEST(Robustness, ExceptionsThroughAllocatingCodeBehaveAsWithoutLeaseguard) {
  auto plain = run_process({victim("exceptions")}, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "caught 100, last \"kept round 99\", allocated while unwinding 100\n");
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("exceptions")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  // Exactly the 100 allocations made during unwinding leak, each with the stack of the
  // destructor the unwinder ran, in code without frame pointers.
  double leaked_bytes = 0;
  for (const JsonValue *leak : all_leaks(run.json)) {
    EXPECT_EQ((*leak)["bytes"].as_number(), 777);
    leaked_bytes += (*leak)["bytes"].as_number() * ((*leak)["count"].is_null() ? 1 : (*leak)["count"].as_number());
    auto names = functions_of((*leak)["stack"]);
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const std::string &name) {
      return name.find("AllocatesWhileUnwinding") != std::string::npos;
    })) << "no destructor frame in the leak's stack";
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const std::string &name) {
      return name.find("bottom") != std::string::npos;
    })) << "the stack does not reach the function that threw";
  }
  EXPECT_EQ(leaked_bytes, 77700);
}

}  // namespace
}  // namespace leaseguard::testing
