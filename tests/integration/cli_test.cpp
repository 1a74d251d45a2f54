// The CLI as CI uses it: exit codes, the text report (golden file), JSON fields, report
// over a directory, and bad input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "api_ids.h"
#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

const std::string kPipeline = std::string(LEASEGUARD_EXAMPLES) + "/leaky_pipeline";

RunResult leaseguard(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), LEASEGUARD_BIN);
  return run_process(arguments);
}

int count_lines(const std::string &text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST(Cli, HelpAndVersion) {
  auto help = leaseguard({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("leaseguard run [OPTIONS] -- COMMAND"), std::string::npos);
  auto version = leaseguard({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("leaseguard ", 0), 0u);
  // Whether reports will have files and lines, decided when it was built.
  EXPECT_NE(version.out.find("\nreports name frames with: function names"), std::string::npos) << version.out;
}

TEST(Cli, UsageErrorsExit2WithOneLine) {
  for (const auto &arguments : std::vector<std::vector<std::string>>{{},
                                                                     {"run"},
                                                                     {"run", "--ttl", "x", "--", "true"},
                                                                     {"run", "--stack-depth", "-1", "--", "true"},
                                                                     {"run", "--fail-on-leak=300", "--", "true"},
                                                                     {"nope"},
                                                                     {"report"}}) {
    auto result = leaseguard(arguments);
    EXPECT_EQ(result.exit_code, 2) << ::testing::PrintToString(arguments);
    EXPECT_EQ(result.err.rfind("leaseguard: error: ", 0), 0u) << result.err;
    EXPECT_LE(count_lines(result.err), 2) << result.err;  // the error, and "Try --help"
  }
}

// A report of a path it cannot read says which path and why (the system's reason, not a
// guess), in one line, with the usage error's code.
TEST(Cli, AReportOfAPathItCannotReadSaysWhy) {
  TempDir dir;
  std::filesystem::create_symlink(dir / "loop", dir / "loop");
  const std::vector<std::pair<std::string, std::string>> cases = {{dir / "missing", std::strerror(ENOENT)},
                                                                  {dir / "loop", std::strerror(ELOOP)}};
  for (const auto &[path, reason] : cases) {
    auto result = leaseguard({"report", path});
    EXPECT_EQ(result.exit_code, 2) << path;
    EXPECT_EQ(result.err, "leaseguard: error: cannot read " + path + ": " + reason + "\n");
  }
}

// As a shell: 127 for a command not found, 126 for one found but not executable, said in
// one line before anything runs.
TEST(Cli, ACommandThatCannotRunExitsAsAShellWould) {
  TempDir dir;
  std::ofstream(dir / "not-executable") << "#!/bin/sh\n";
  const std::vector<std::pair<std::string, int>> cases = {
      {"/nonexistent/program", 127}, {"no-such-command-anywhere", 127}, {dir / "not-executable", 126}};
  for (const auto &[command, status] : cases) {
    auto result = leaseguard({"run", "--sim", "--out", dir / "out", "--", command});
    EXPECT_EQ(result.exit_code, status) << command;
    EXPECT_EQ(result.err.rfind("leaseguard: error: cannot run '" + command + "'", 0), 0u) << result.err;
    EXPECT_EQ(count_lines(result.err), 1) << result.err;
  }
}

// What can be found wrong before the command runs is, so it does not run for nothing.
TEST(Cli, OptionsThatCannotWorkAreRefusedBeforeTheCommandRuns) {
  TempDir dir;
  const std::string marker = dir / "ran";
  const std::vector<std::vector<std::string>> refused = {
      {"--format", "json=" + (dir / "missing/report.json")},  // no such directory
      {"--format", "json=" + dir.path()},                     // a directory
      {"--fail-on-leak", "5"},                                // the code takes '='
  };
  for (const auto &options : refused) {
    std::vector<std::string> arguments = {"run", "--sim", "--out", dir / "out"};
    arguments.insert(arguments.end(), options.begin(), options.end());
    for (const char *word : {"--", "/usr/bin/touch"}) arguments.push_back(word);
    arguments.push_back(marker);
    auto result = leaseguard(arguments);
    EXPECT_EQ(result.exit_code, 2) << ::testing::PrintToString(options) << "\n" << result.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << ::testing::PrintToString(options);
    EXPECT_EQ(count_lines(result.err), options[0] == "--fail-on-leak" ? 2 : 1) << result.err;
  }
  auto code = leaseguard({"run", "--sim", "--fail-on-leak", "5", "--", "/bin/true"});
  EXPECT_NE(code.err.find("--fail-on-leak takes its value after '=': --fail-on-leak=5"), std::string::npos) << code.err;
  // check's operand is a process id: a small one after --fail-on-leak is that (a container's
  // processes have such pids), not a mistyped code.
  auto checked = leaseguard({"check", "--fail-on-leak", "611"});
  EXPECT_EQ(checked.exit_code, 2) << checked.err;
  EXPECT_EQ(checked.err.find("takes its value after"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("611"), std::string::npos) << checked.err;
}

// report --out makes its directory (before the work, so a bad one fails first); --min-bytes
// takes the sizes suppression files take; --kind's error lists every kind.
TEST(Cli, ReportOptionsAreAsDocumented) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "run", "--", kPipeline}).exit_code, 0);
  auto made = leaseguard({"report", "--quiet", "--out", dir / "new/reports", "--format", "json", dir / "run"});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "new/reports/leaseguard-report.json"));
  auto sized = leaseguard({"report", "--min-bytes", "5M", dir / "run"});
  EXPECT_EQ(sized.exit_code, 0) << sized.err;
  EXPECT_NE(sized.out.find("left out by filters"), std::string::npos) << sized.out;
  auto kind = leaseguard({"report", "--kind", "nope", dir / "run"});
  EXPECT_EQ(kind.exit_code, 2);
  for (int i = 0; i < static_cast<int>(Kind::Count); ++i)
    EXPECT_NE(kind.err.find(std::string(kind_name(static_cast<Kind>(i)))), std::string::npos)
        << kind_name(static_cast<Kind>(i)) << " missing from: " << kind.err;
}

// Runs into one --out directory are never merged by accident: each has a directory of its
// own, `latest` names the newest, `report DIR` reads it (every run with --all-runs), and
// --keep N leaves the newest N.
// A symbolic link to itself (or to nothing) in a run's directory is passed over: `report` of
// the directory and `run` into it report as before (both once died of an uncaught
// filesystem_error, rc 134).
TEST(Cli, ASymbolicLinkLoopInARunsDirectoryIsPassedOver) {
  TempDir dir;
  const std::string out = dir / "out";
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", out, "--", kPipeline}).exit_code, 0);
  const std::string run = std::filesystem::read_symlink(dir / "out/latest").string();
  std::filesystem::create_symlink("loop", dir / ("out/" + run + "/loop"));
  std::filesystem::create_symlink("nowhere", dir / ("out/" + run + "/dangling.journal"));
  const auto reported = leaseguard({"report", "--quiet", "--fail-on-leak", out});
  EXPECT_EQ(reported.exit_code, 23) << reported.err;
  std::filesystem::create_symlink("loop", dir / "out/loop");
  const auto ran = leaseguard({"run", "--sim", "--quiet", "--fail-on-leak", "--out", out, "--", kPipeline});
  EXPECT_EQ(ran.exit_code, 23) << ran.err;
}

// Two runs into one --out at once, each with --keep 1: the one that ends first leaves the
// other's directory, whose command still runs (it removed it, journals and all).
TEST(Cli, KeepPassesOverARunStillGoing) {
  TempDir dir;
  const std::string out = dir / "out", gate = dir / "gate";
  ASSERT_EQ(mkfifo(gate.c_str(), 0600), 0);
  const pid_t slow = fork();
  ASSERT_GE(slow, 0);
  if (slow == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execl(LEASEGUARD_BIN, "leaseguard", "run", "--sim", "--quiet", "--keep", "1", "--out", out.c_str(), "--", "sh",
          "-c", ("read line < " + gate).c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  // Its directory made (`latest` names it), the other run goes from start to end.
  std::error_code error;
  while (std::filesystem::read_symlink(dir / "out/latest", error).empty()) std::this_thread::yield();
  const std::string slow_run = std::filesystem::read_symlink(dir / "out/latest").string();
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--keep", "1", "--out", out, "--", kPipeline}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::is_directory(dir / ("out/" + slow_run))) << "the running run's directory was pruned";
  std::ofstream(gate) << "go\n";
  int status = 0;
  ASSERT_EQ(waitpid(slow, &status, 0), slow);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(Cli, EachRunHasItsOwnDirectoryAndReportReadsTheNewest) {
  TempDir dir;
  const std::string out = dir / "out";
  auto leaks_in = [&](std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), {"report", "--quiet", "--format", "json=" + (dir / "r.json")});
    auto result = leaseguard(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    JsonValue json;
    std::string error;
    EXPECT_TRUE(JsonValue::parse(read_text(dir / "r.json"), json, error)) << error;
    return static_cast<int>(json["summary"]["leaked_allocations"].as_number());
  };
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", out, "--", kPipeline}).exit_code, 0);
  std::vector<std::string> runs;
  for (const auto &entry : std::filesystem::directory_iterator(out))
    if (entry.is_directory() && !entry.is_symlink()) runs.push_back(entry.path().filename());
  std::sort(runs.begin(), runs.end());
  ASSERT_EQ(runs.size(), 2u);
  for (const std::string &name : runs) EXPECT_EQ(name.rfind("run-", 0), 0u) << name;
  EXPECT_EQ(std::filesystem::read_symlink(dir / "out/latest").string(), runs.back());
  EXPECT_EQ(leaks_in({out}), 4);  // the newest run's four, not both runs' eight
  EXPECT_EQ(leaks_in({"--all-runs", out}), 8);
  EXPECT_EQ(leaks_in({dir / ("out/" + runs.front())}), 4);  // a run's own directory, named
  // --keep 1: the new run stays, the two before go.
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--keep", "1", "--out", out, "--", kPipeline}).exit_code, 0);
  int left = 0;
  for (const auto &entry : std::filesystem::directory_iterator(out))
    left += entry.is_directory() && !entry.is_symlink();
  EXPECT_EQ(left, 1);
  EXPECT_FALSE(std::filesystem::exists(dir / ("out/" + runs.front())));
  EXPECT_EQ(leaks_in({"--all-runs", out}), 4);
}

TEST(Cli, OutputDirectoryThatIsAFileIsAnError) {
  TempDir dir;
  std::ofstream(dir / "file") << "x";
  auto result = leaseguard({"run", "--sim", "--out", dir / "file", "--", "/bin/true"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("not a directory"), std::string::npos);
}

TEST(Cli, ExitStatusIsTheCommandsUnlessAskedToFailOnLeaks) {
  TempDir dir;
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--", "/bin/sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--", kPipeline}).exit_code, 0);
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--fail-on-leak", "--", kPipeline}).exit_code, 23);
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--fail-on-leak=42", "--", kPipeline}).exit_code, 42);
  // No leak: the command's own status, even with --fail-on-leak.
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--fail-on-leak", "--", "/bin/true"}).exit_code, 0);
  EXPECT_EQ(leaseguard({"run", "--sim", "--out", dir.path(), "--", "/bin/sh", "-c", "kill -TERM $$"}).exit_code,
            128 + 15);
}

// Replaces what changes from run to run (addresses, pids, paths) with fixed words.
std::string normalize(std::string text) {
  text = std::regex_replace(text, std::regex("0x[0-9a-f]+"), "0xADDR");
  text = std::regex_replace(text, std::regex("==[0-9]+=="), "==PID==");
  text = std::regex_replace(text, std::regex("[0-9]+\\.[0-9] ms"), "T ms");
  text = std::regex_replace(text, std::regex("process [0-9]+ "), "process PID ");
  text = std::regex_replace(text, std::regex(LEASEGUARD_EXAMPLES), "EXAMPLES");
  text = std::regex_replace(text, std::regex("/[^ ]*/examples/leaky_pipeline\\.c"), "SOURCE/examples/leaky_pipeline.c");
  return text;
}

TEST(Cli, TextReportMatchesTheGoldenFile) {
  TempDir dir;
  auto result = leaseguard({"run", "--sim", "--out", dir.path(), "--stack-depth", "2", "--", kPipeline});
  ASSERT_EQ(result.exit_code, 0);
  std::string golden_path = std::string(LEASEGUARD_GOLDEN) + "/leaky_pipeline.txt";
  std::string actual = normalize(result.err);
  if (std::getenv("LEASEGUARD_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path) << actual;
  EXPECT_EQ(actual, read_text(golden_path));
}

TEST(Cli, QuietPrintsNothing) {
  TempDir dir;
  auto result = leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--format", "text", "--", kPipeline});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.err, "frame rejected: bad header\n");  // the program's own stderr only
  EXPECT_NE(read_text(dir / "leaseguard-report.txt").find("SUMMARY: leaseguard: 14336 byte(s)"), std::string::npos);
}

TEST(Cli, JsonHasEveryContractField) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {kPipeline, "--an-argument"});
  ASSERT_EQ(run.result.exit_code, 0);
  const JsonValue &json = run.json;
  EXPECT_EQ(json["schema"].as_string(), "leaseguard-report/1");
  const JsonValue &summary = json["summary"];
  EXPECT_EQ(summary["leaked_bytes"].as_number(), 14336);
  EXPECT_EQ(summary["leaked_allocations"].as_number(), 4);
  EXPECT_EQ(summary["reachable_bytes"].as_number(), 1 << 20);  // the workspace it keeps in a global
  EXPECT_EQ(summary["reachable_allocations"].as_number(), 1);
  EXPECT_EQ(summary["suppressed_allocations"].as_number(), 0);
  EXPECT_EQ(summary["processes"].as_number(), 1);
  EXPECT_EQ(summary["leases"].as_number(), 1);
  const JsonValue &process = json["processes"][0];
  EXPECT_GT(process["pid"].as_number(), 0);
  EXPECT_GT(process["ppid"].as_number(), 0);
  ASSERT_EQ(process["command"].size(), 2u);
  EXPECT_EQ(process["command"][1].as_string(), "--an-argument");
  EXPECT_EQ(process["exit"]["code"].as_number(), 0);
  EXPECT_TRUE(process["complete"].as_bool());
  const JsonValue &lease = process["leases"][0];
  EXPECT_EQ(lease["id"].as_number(), 1);
  EXPECT_EQ(lease["name"].as_string(), "process");
  EXPECT_EQ(lease["ended_by"].as_string(), "exit");
  EXPECT_EQ(lease["policy"].as_string(), "report");
  ASSERT_EQ(lease["leaks"].size(), 5u);  // the four leaks and the workspace, each with its class
  EXPECT_EQ(lease["leaked_bytes"].as_number(), 14336);
  EXPECT_EQ(lease["reachable_bytes"].as_number(), 1 << 20);
  for (const auto &leak : lease["leaks"].items()) {
    const bool workspace = leak["bytes"].as_number() == (1 << 20);
    EXPECT_EQ(leak["reachability"].as_string(), workspace ? "reachable" : "direct");
    EXPECT_EQ(leak["api"].as_string(), "cuMemAlloc_v2");
    EXPECT_EQ(leak["kind"].as_string(), "device");
    EXPECT_GT(leak["bytes"].as_number(), 0);
    EXPECT_EQ(leak["address"].as_string().rfind("0x", 0), 0u);
    EXPECT_EQ(std::stoull(leak["address"].as_string(), nullptr, 16) % 256, 0u);
    EXPECT_EQ(leak["device"].as_number(), 0);
    EXPECT_GT(leak["thread"].as_number(), 0);
    EXPECT_GE(leak["age_ms"].as_number(), 0);
    EXPECT_FALSE(leak["reclaimed"].as_bool());
    const JsonValue &frame = leak["stack"][0];
    EXPECT_NE(frame["module"].as_string().find("leaky_pipeline"), std::string::npos);
    EXPECT_EQ(frame["offset"].as_string().rfind("0x", 0), 0u);
    EXPECT_TRUE(frame["function"].as_string() == "blur" || frame["function"].as_string() == "upload_frame" ||
                (workspace && frame["function"].as_string() == "main"));
    EXPECT_NE(frame["file"].as_string().find("leaky_pipeline.c"), std::string::npos);
    EXPECT_GT(frame["line"].as_number(), 0);
  }
}

TEST(Cli, FunctionFileAndLineAreNullWhenUnknown) {
  // A stripped copy of a victim: its frames have a module and an offset, and nothing else
  // can be known about them. They must be null, never invented.
  TempDir dir;
  std::filesystem::copy_file(victim("threads"), dir / "threads-stripped");
  ASSERT_EQ(run_process({"/usr/bin/strip", dir / "threads-stripped"}).exit_code, 0);
  auto run = run_under_leaseguard(dir.path(), {dir / "threads-stripped"});
  ASSERT_EQ(run.result.exit_code, 0);
  auto leaks = all_leaks(run.json);
  ASSERT_FALSE(leaks.empty());
  const JsonValue &frame = (*leaks[0])["stack"][0];
  EXPECT_NE(frame["module"].as_string().find("threads-stripped"), std::string::npos);
  EXPECT_EQ(frame["offset"].as_string().rfind("0x", 0), 0u);
  EXPECT_TRUE(frame["function"].is_null());
  EXPECT_TRUE(frame["file"].is_null());
  EXPECT_TRUE(frame["line"].is_null());
  EXPECT_NE(run.result.err.find("(" + (dir / "threads-stripped") + "+0x"), std::string::npos);
}

TEST(Cli, ReportRendersADirectoryOfJournals) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--", kPipeline}).exit_code, 0);
  auto report = leaseguard({"report", dir.path()});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("SUMMARY: leaseguard: 14336 byte(s) leaked in 4 allocation(s)."), std::string::npos);
  EXPECT_NE(report.out.find("exited with code 0"), std::string::npos);
  EXPECT_EQ(leaseguard({"report", "--fail-on-leak", dir.path()}).exit_code, 23);
  auto json = leaseguard({"report", "--quiet", "--format", "json=" + (dir / "again.json"), dir.path()});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_EQ(json.out, "");
  JsonValue parsed;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "again.json"), parsed, error)) << error;
  EXPECT_EQ(parsed["summary"]["leaked_bytes"].as_number(), 14336);
}

// A report that cannot be written whole is an error naming the file and why, exit 2: the
// JSON report is handed to its file as it is made, the others written at once.
TEST(Cli, AReportThatCannotBeWrittenIsAnErrorNamingTheFile) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--", kPipeline}).exit_code, 0);
  for (const char *format : {"json", "sarif"}) {
    auto full = leaseguard({"report", "--quiet", "--format", std::string(format) + "=/dev/full", dir.path()});
    EXPECT_EQ(full.exit_code, 2) << format;
    EXPECT_EQ(full.err, "leaseguard: error: cannot write /dev/full: No space left on device\n") << format;
    auto missing =
        leaseguard({"report", "--quiet", "--format", std::string(format) + "=" + (dir / "no/such.json"), dir.path()});
    EXPECT_EQ(missing.exit_code, 2) << format;
    // Found before the work: the directory is not there.
    EXPECT_EQ(missing.err, "leaseguard: error: --format " + std::string(format) + "=" + (dir / "no/such.json") +
                               ": no directory " + (dir / "no") + "\n")
        << format;
  }
  // A report that could not be written whole is removed, but never a device.
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
}

TEST(Cli, ReportOfDamagedOrMissingInputExits2) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--", kPipeline}).exit_code, 0);
  EXPECT_EQ(leaseguard({"report", dir / "missing"}).exit_code, 2);
  std::string journal;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(dir.path()))
    if (entry.path().extension() == ".journal") journal = entry.path();
  ASSERT_FALSE(journal.empty());
  {
    std::fstream file(journal, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(64 * 3 + 2);
    file.put('\x7f');  // breaks one record's tag
  }
  auto damaged = leaseguard({"report", journal});
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_NE(damaged.out.find("damaged journal, report is partial"), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.err.find("leaseguard: error: damaged journal input"), std::string::npos);
  std::ofstream(dir / "garbage.journal") << std::string(128, 'x');
  auto garbage = leaseguard({"report", dir / "garbage.journal"});
  EXPECT_EQ(garbage.exit_code, 2);
  EXPECT_NE(garbage.err.find("not a leaseguard journal"), std::string::npos);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Cli, SuppressionsSilenceMatchingLeaksAndTheSummaryCountsThem) {
  TempDir dir;
  std::ofstream(dir / "leaks.supp") << "# the blur scratch buffer is known\nleak:^blur$\n";
  auto run = run_under_leaseguard(dir.path(), {kPipeline}, {"--suppressions", dir / "leaks.supp", "--fail-on-leak"});
  // One leak remains (upload_frame), so --fail-on-leak still fails.
  EXPECT_EQ(run.result.exit_code, 23) << run.result.err;
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 1);
  EXPECT_EQ(run.json["summary"]["suppressed_allocations"].as_number(), 3);
  EXPECT_NE(run.result.err.find("Suppressions used:\n  count      bytes template\n      3      12288 leak:^blur$\n"),
            std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("SUMMARY: leaseguard: 2048 byte(s) leaked in 1 allocation(s)."), std::string::npos);

  // Suppressing both: nothing left to fail on.
  std::ofstream(dir / "all.supp") << "leak:leaky_pipeline.c\n";
  auto clean = run_under_leaseguard(dir.path(), {kPipeline}, {"--suppressions", dir / "all.supp", "--fail-on-leak"});
  EXPECT_EQ(clean.result.exit_code, 0);
  EXPECT_EQ(clean.json["summary"]["suppressed_allocations"].as_number(), 4);
}

TEST(Cli, GenSuppressionsPrintsAReadyLinePerGroup) {
  TempDir dir;
  auto result = leaseguard({"run", "--sim", "--out", dir.path(), "--gen-suppressions", "--", kPipeline});
  EXPECT_NE(result.err.find("  Suppress with: leak:^blur$\n"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("  Suppress with: leak:^upload_frame$\n"), std::string::npos);
  // The suggested lines work as a suppressions file.
  std::ofstream(dir / "gen.supp") << "leak:^blur$\nleak:^upload_frame$\n";
  auto quiet = leaseguard({"report", "--suppressions", dir / "gen.supp", "--fail-on-leak", dir.path()});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
}

// On a terminal a long report says what it is doing on one line, rewritten in place and
// cleared before the text report; never where stderr is not a terminal, nor under --quiet.
// (LEASEGUARD_PROGRESS_AFTER_MS=0: shown from the start instead of after a second.)
TEST(Cli, AReportSaysWhatItIsDoingOnATerminalOnly) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "run", "--", kPipeline}).exit_code, 0);
  const std::string report = std::string(LEASEGUARD_BIN) + " report --format json=" + (dir / "r.json") + " ";
  auto on_terminal = [&](const std::string &options) {
    // script(1) gives the command a terminal; what it wrote there comes back on stdout.
    return run_process({"/usr/bin/script", "-qec", report + options + (dir / "run"), "/dev/null"},
                       {{"LEASEGUARD_PROGRESS_AFTER_MS", "0"}});
  };
  auto shown = on_terminal("");
  const std::string &tty = shown.out;
  const size_t first = tty.find("\r\x1b[Kleaseguard: ");
  EXPECT_NE(first, std::string::npos) << tty;
  // The line is cleared ("\r", erase to its end) after its last rewrite, before the report.
  const size_t report_begins = tty.find("SUMMARY: leaseguard:");
  ASSERT_NE(report_begins, std::string::npos) << tty;
  const size_t last_line = tty.rfind("\r\x1b[Kleaseguard: ", report_begins);
  ASSERT_NE(last_line, std::string::npos) << tty;
  const size_t cleared = tty.find("\r\x1b[K", last_line + 1);
  EXPECT_LT(cleared, tty.find("detected device memory leaks")) << tty;
  auto quiet = on_terminal("--quiet ");
  EXPECT_EQ(quiet.out.find("\x1b[K"), std::string::npos) << quiet.out;
  auto piped = run_process({LEASEGUARD_BIN, "report", "--format", "json=" + (dir / "r.json"), dir / "run"},
                           {{"LEASEGUARD_PROGRESS_AFTER_MS", "0"}});
  EXPECT_EQ((piped.out + piped.err).find("\x1b[K"), std::string::npos) << piped.err;
  EXPECT_NE((piped.out + piped.err).find("SUMMARY: leaseguard:"), std::string::npos) << piped.out << piped.err;
}

// docs/report-format.md's JSON sample names every field a report has: a field added to the
// report and not to the page fails here.
TEST(Cli, TheJsonSampleOfTheDocsNamesEveryFieldOfAReport) {
  const std::string page = read_text(std::string(LEASEGUARD_SOURCE_ROOT) + "/docs/report-format.md");
  const size_t section = page.find("## JSON, schema");
  ASSERT_NE(section, std::string::npos);
  const size_t open = page.find("```", section);
  const size_t close = page.find("```", open + 3);
  ASSERT_NE(close, std::string::npos);
  const std::string sample = page.substr(open, close - open);
  std::set<std::string> named;
  const std::regex key("\"([a-z_]+)\":");
  for (auto it = std::sregex_iterator(sample.begin(), sample.end(), key); it != std::sregex_iterator(); ++it)
    named.insert((*it)[1].str());
  TempDir dir;
  // A run with a leak, a late free, a double free and lease endings of several kinds.
  auto run = run_under_leaseguard(dir.path(), {victim("robustness")}, {"--format", "json"});
  std::set<std::string> present;
  std::function<void(const JsonValue &)> walk = [&](const JsonValue &value) {
    if (value.type() == JsonValue::Type::Object) {
      for (size_t i = 0; i < value.size(); ++i) {
        present.insert(std::string(value.member_name(i)));
        walk(value[value.member_name(i)]);
      }
    } else if (value.type() == JsonValue::Type::Array) {
      for (const auto &item : value.items()) walk(item);
    }
  };
  walk(run.json);
  ASSERT_GT(present.size(), 30u);
  for (const std::string &name : present) EXPECT_TRUE(named.count(name) != 0) << name << " is not in the page's sample";
}

// docs/suppressions.md's example file, taken from the page as it is, is accepted as written.
TEST(Cli, TheSuppressionsExampleOfTheDocsIsAcceptedAsWritten) {
  TempDir dir;
  const std::string page = read_text(std::string(LEASEGUARD_SOURCE_ROOT) + "/docs/suppressions.md");
  const size_t open = page.find("```\n");
  ASSERT_NE(open, std::string::npos);
  const size_t close = page.find("```", open + 4);
  ASSERT_NE(close, std::string::npos);
  const std::string example = page.substr(open + 4, close - open - 4);
  ASSERT_NE(example.find("leak:"), std::string::npos) << example;
  std::ofstream(dir / "example.supp") << example;
  auto run = leaseguard(
      {"run", "--sim", "--quiet", "--out", dir / "out", "--suppressions", dir / "example.supp", "--", kPipeline});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(Cli, ABadSuppressionsFileIsAUsageErrorBeforeTheCommandRuns) {
  TempDir dir;
  std::ofstream(dir / "bad.supp") << "leak:ok\nleak:x colour=red\n";
  auto result = leaseguard({"run", "--sim", "--out", dir / "out", "--suppressions", dir / "bad.supp", "--", kPipeline});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "leaseguard: error: " + (dir / "bad.supp") +
                            ":2: unknown qualifier 'colour=red' (api=PATTERN, min_bytes=SIZE)\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));  // the command never ran
  EXPECT_EQ(leaseguard({"run", "--sim", "--suppressions", dir / "missing.supp", "--", kPipeline}).exit_code, 2);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Cli, SarifJunitAndFoldedFormats) {
  TempDir dir;
  auto run_once = [&](const std::string &name) {
    return leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--source-root", LEASEGUARD_SOURCE_ROOT,
                       "--format", "sarif=" + (dir / (name + ".sarif")), "--format", "junit=" + (dir / (name + ".xml")),
                       "--format", "folded=" + (dir / (name + ".folded")), "--", kPipeline});
  };
  ASSERT_EQ(run_once("a").exit_code, 0);
  ASSERT_EQ(run_once("b").exit_code, 0);

  JsonValue a, b;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "a.sarif"), a, error)) << error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "b.sarif"), b, error)) << error;
  EXPECT_EQ(a["version"].as_string(), "2.1.0");
  const JsonValue &results = a["runs"][0]["results"];
  ASSERT_EQ(results.size(), 2u);  // one result per leak group
  EXPECT_EQ(a["runs"][0]["tool"]["driver"]["rules"][0]["id"].as_string(), results[0]["ruleId"].as_string());
  const JsonValue &location = results[0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(location["artifactLocation"]["uri"].as_string(), "examples/leaky_pipeline.c");  // relative to the root
  EXPECT_EQ(location["artifactLocation"]["uriBaseId"].as_string(), "SRCROOT");
  EXPECT_EQ(location["region"]["startLine"].as_number(), 45);
  EXPECT_GE(results[0]["codeFlows"][0]["threadFlows"][0]["locations"].size(), 2u);
  // Fingerprints are stable across runs (different pids and address-space layouts).
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(results[i]["partialFingerprints"]["leaseguardStack/v2"].as_string(),
              b["runs"][0]["results"][i]["partialFingerprints"]["leaseguardStack/v2"].as_string());
  EXPECT_NE(results[0]["partialFingerprints"]["leaseguardStack/v2"].as_string(),
            results[1]["partialFingerprints"]["leaseguardStack/v2"].as_string());

  std::string junit = read_text(dir / "a.xml");
  EXPECT_EQ(
      junit.rfind(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leaseguard\" tests=\"1\" failures=\"1\">", 0),
      0u)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"leaseguard.leaky_pipeline\" name=\"process (exit)\" time=\""),
            std::string::npos)
      << junit;
  size_t failures = 0;
  for (size_t at = junit.find("<failure "); at != std::string::npos; at = junit.find("<failure ", at + 1)) ++failures;
  EXPECT_EQ(failures, 1u);  // one per test case, both leak groups in it
  EXPECT_NE(junit.find("2 leak group(s)"), std::string::npos) << junit;

  std::istringstream folded(read_text(dir / "a.folded"));
  std::string line;
  uint64_t total = 0;
  int lines = 0;
  while (std::getline(folded, line)) {
    ++lines;
    EXPECT_NE(line.find(";main;"), std::string::npos) << line;
    total += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(lines, 2);  // one per distinct stack: blur's three leaks are one line
  EXPECT_EQ(total, 14336u);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Cli, JsonReportsAreInputsAndMergeWithJournals) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "a", "--format", "json=" + (dir / "a.json"), "--",
                        kPipeline})
                .exit_code,
            0);
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "b", "--", victim("threads")}).exit_code, 0);
  auto from_json = leaseguard({"report", dir / "a.json"});
  EXPECT_EQ(from_json.exit_code, 0) << from_json.err;
  EXPECT_NE(from_json.out.find("SUMMARY: leaseguard: 14336 byte(s) leaked in 4 allocation(s)."), std::string::npos);
  EXPECT_NE(from_json.out.find("in blur "), std::string::npos);  // frames come back symbolized
  auto merged = leaseguard({"report", "--format", "json=" + (dir / "merged.json"), dir / "a.json", dir / "b"});
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
  JsonValue json;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "merged.json"), json, error));
  EXPECT_EQ(json["summary"]["processes"].as_number(), 2);
  EXPECT_EQ(json["summary"]["leaked_allocations"].as_number(), 4 + 8);
  EXPECT_EQ(leaseguard({"report", dir / "not-there.json"}).exit_code, 2);
  std::ofstream(dir / "other.json") << "{\"schema\": \"something-else/1\"}";
  auto wrong = leaseguard({"report", dir / "other.json"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("not a leaseguard report"), std::string::npos);
}

TEST(Cli, FiltersAndMaxGroups) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir.path(), "--", kPipeline}).exit_code, 0);
  auto big = leaseguard({"report", "--min-bytes", "3000", "--format", "json=" + (dir / "big.json"), dir.path()});
  EXPECT_NE(big.out.find("SUMMARY: leaseguard: 12288 byte(s) leaked in 3 allocation(s)."), std::string::npos)
      << big.out;
  EXPECT_NE(big.out.find("1 leaked allocation(s) left out by filters"), std::string::npos);
  JsonValue json;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "big.json"), json, error));
  EXPECT_EQ(json["summary"]["filtered_allocations"].as_number(), 1);
  EXPECT_NE(leaseguard({"report", "--api", "cuMemAlloc*", "--lease", "proc*", dir.path()})
                .out.find("leaked in 4 allocation(s)"),
            std::string::npos);
  EXPECT_NE(leaseguard({"report", "--kind", "host", dir.path()}).out.find("leaked in 0 allocation(s)"),
            std::string::npos);
  EXPECT_NE(leaseguard({"report", "--lease", "job", dir.path()}).out.find("leaked in 0 allocation(s)"),
            std::string::npos);
  auto one = leaseguard({"report", "--max-groups", "1", dir.path()});
  EXPECT_NE(one.out.find("(omitting 1 more leak group(s))"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("upload_frame"), std::string::npos);  // the smaller group is the one left out
}

TEST(Cli, DiffReportsOnlyLeakGroupsTheBaselineLacks) {
  TempDir dir;
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "base", "--format", "json=" + (dir / "base.json"),
                        "--", kPipeline})
                .exit_code,
            0);
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "same", "--", kPipeline}).exit_code, 0);
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "new", "--", victim("threads")}).exit_code, 0);
  // The same program again: other pids, other addresses, same leaks -> nothing new.
  auto same = leaseguard({"diff", dir / "base", dir / "same"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("4 leaked allocation(s) also in the baseline, left out"), std::string::npos) << same.out;
  EXPECT_EQ(leaseguard({"diff", dir / "base.json", dir / "same"}).exit_code, 0);  // a JSON baseline too
  // Another program's leaks are new.
  auto fresh = leaseguard({"diff", dir / "base", dir / "new"});
  EXPECT_EQ(fresh.exit_code, 23);
  EXPECT_NE(fresh.out.find("in leak_last_one "), std::string::npos) << fresh.out;
  // --baseline on run: only new leak groups fail the build.
  auto gated = leaseguard({"run", "--sim", "--quiet", "--out", dir / "gated", "--baseline", dir / "base.json",
                           "--fail-on-leak", "--", kPipeline});
  EXPECT_EQ(gated.exit_code, 0) << gated.err;
  EXPECT_EQ(leaseguard({"diff", dir / "nothing-here", dir / "new"}).exit_code, 2);
}

// A group that leaks more than in the baseline keeps its excess: growth is not hidden by the
// site's having leaked before. 10 leaks of one site against 30 of it: 20 are new; the other
// way round nothing is.
TEST(Cli, DiffComparesEachGroupsCountNotOnlyItsStack) {
  TempDir dir;
  for (const char *count : {"10", "30"})
    ASSERT_EQ(
        leaseguard({"run", "--sim", "--quiet", "--out", dir / count, "--", victim("report_shapes"), "many", count, "1"})
            .exit_code,
        0);
  auto grown = leaseguard({"diff", dir / "10", dir / "30"});
  EXPECT_EQ(grown.exit_code, 23) << grown.out << grown.err;
  EXPECT_NE(grown.out.find("10 leaked allocation(s) also in the baseline, left out"), std::string::npos) << grown.out;
  EXPECT_NE(grown.out.find("in 20 allocation(s)"), std::string::npos) << grown.out;
  auto shrunk = leaseguard({"diff", dir / "30", dir / "10"});
  EXPECT_EQ(shrunk.exit_code, 0) << shrunk.out << shrunk.err;
  EXPECT_NE(shrunk.out.find("10 leaked allocation(s) also in the baseline, left out"), std::string::npos) << shrunk.out;
}

// A baseline stays a baseline after the program is rebuilt: `run` keeps a symbolized JSON
// beside its journals, and diff reads it instead of journals whose binary has changed. A
// baseline that has only such journals is a warning naming the module, not a silent "all new".
TEST(Cli, ABaselineSurvivesARebuildOfTheProgram) {
  TempDir dir;
  const std::string program = dir / "pipeline";
  std::filesystem::copy_file(kPipeline, program);
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "base", "--", program}).exit_code, 0);
  // "Rebuilt": the same code under another build-id (none), which the baseline's journal no
  // longer matches.
  ASSERT_EQ(run_process({"/usr/bin/objcopy", "--remove-section=.note.gnu.build-id", program}).exit_code, 0);
  ASSERT_EQ(leaseguard({"run", "--sim", "--quiet", "--out", dir / "current", "--", program}).exit_code, 0);
  auto same = leaseguard({"diff", dir / "base", dir / "current"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("4 leaked allocation(s) also in the baseline, left out"), std::string::npos) << same.out;
  // Without the JSON, only journals: the leaks count as new, and the report says why.
  std::filesystem::remove(
      dir / ("base/" + std::filesystem::read_symlink(dir / "base/latest").string() + "/leaseguard-run.json"));
  auto unexplained = leaseguard({"diff", dir / "base", dir / "current"});
  EXPECT_EQ(unexplained.exit_code, 23) << unexplained.out;
  EXPECT_NE(unexplained.out.find("cannot be symbolized in " + program + ": it was rebuilt since the run"),
            std::string::npos)
      << unexplained.out;
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

TEST(Cli, ALeakInAPluginUnloadedBeforeExitIsStillNamed) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("dlclose_leak"), victim("libleaky_plugin.so")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  const JsonValue &frame = (*leaks[0])["stack"][0];
  EXPECT_NE(frame["module"].as_string().find("libleaky_plugin.so"), std::string::npos);
  EXPECT_EQ(frame["function"].as_string(), "leak_in_plugin");
  EXPECT_NE(frame["file"].as_string().find("leaky_plugin.c"), std::string::npos);
  EXPECT_EQ(frame["line"].as_number(), 14);
}

// A library loaded where an unloaded one was gets its own frame rules, module and name: the
// caches keyed by code address forget what the dlclose unmapped.
TEST(Cli, APluginLoadedWhereAnUnloadedOneWasIsNamedAsItself) {
  TempDir dir;
  auto run = run_under_leaseguard(
      dir.path(), {victim("dlclose_leak"), victim("libleaky_plugin.so"), victim("libleaky_plugin_b.so")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  // The case under test: the loader reused the addresses (it does on glibc, for two
  // libraries of one size loaded one after the other).
  ASSERT_NE(run.result.out.find("same addresses"), std::string::npos) << run.result.out;
  auto named = first_functions_and_modules(all_leaks(run.json));
  ASSERT_EQ(named.size(), 2u);
  ASSERT_EQ(named.count("leak_in_plugin"), 1u);
  ASSERT_EQ(named.count("leak_in_second_plugin"), 1u);
  EXPECT_NE(named.find("leak_in_plugin")->second.find("libleaky_plugin.so"), std::string::npos);
  EXPECT_NE(named.find("leak_in_second_plugin")->second.find("libleaky_plugin_b.so"), std::string::npos);
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

// What changes from run to run in every format: addresses, pids, thread ids, times, paths.
std::string normalize_any(std::string text, const std::string &out_dir) {
  text = normalize(text);
  text = std::regex_replace(text, std::regex(out_dir), "OUT");
  text = std::regex_replace(text, std::regex(LEASEGUARD_SOURCE_ROOT), "SOURCE");
  text = std::regex_replace(text, std::regex("\"(pid|ppid|thread|pid_namespace)\": ?[0-9]+"), "\"$1\": 0");
  text = std::regex_replace(text, std::regex("\"(begin_ms|end_ms|time_ms|age_ms|event_time_resolution_ms)\": ?[0-9.]+"),
                            "\"$1\": 0");
  text = std::regex_replace(text, std::regex("pid [0-9]+"), "pid PID");
  text = std::regex_replace(text, std::regex("<property name=\"pid\" value=\"[0-9]+\"/>"),
                            "<property name=\"pid\" value=\"PID\"/>");
  text = std::regex_replace(text, std::regex(" time=\"[0-9.]+\""), " time=\"T\"");  // JUnit durations
  text = std::regex_replace(text, std::regex("\\[[0-9.]+,([0-9]+)\\]"), "[T,$1]");  // timeline points
  text = std::regex_replace(text, std::regex("lg-[0-9a-f]+-[0-9]+\\.[0-9]+"), "RUN.PID");
  text = std::regex_replace(text, std::regex("run-[0-9]{8}-[0-9]{6}\\.[0-9]{3}-[0-9]+/"), "RUN-DIR/");
  return text;
}

// A run that observed no allocation says what it observed, in text, JSON and (under
// --fail-on-leak) on stderr, never "0 byte(s) leaked" as if something had been checked.
TEST(Cli, ARunThatObservedNothingSaysWhatItObservedInsteadOfZeroLeaks) {
  struct Case {
    std::string name;
    std::vector<std::string> run_options;
    std::vector<std::string> command;
    std::map<std::string, std::string> environment;
    std::string observed;
    std::string said;
  };
  std::vector<Case> cases = {
      {"a driver loaded, no allocation",
       {"--sim"},
       {victim("no_allocation")},
       {},
       "no_allocation",
       "no allocation was recorded: the program made none, or its driver refused them; LEASEGUARD_SIM_PROBE=1 shows "
       "every call the program made to the simulator"},
      {"no driver loaded",
       {},
       {"/bin/true"},
       {},
       "no_driver",
       "no process loaded a GPU driver (libcuda.so.1, libamdhip64.so) or recorded an allocation; without a GPU, "
       "`leaseguard run --sim` runs the program on the simulated one"},
      {"recording disabled",
       {"--sim"},
       {victim("direct_calls")},
       {{"LEASEGUARD_DISABLE", "1"}},
       "disabled",
       "recording was disabled (LEASEGUARD_DISABLE=1)"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    std::vector<std::string> arguments = {LEASEGUARD_BIN, "run"};
    arguments.insert(arguments.end(), c.run_options.begin(), c.run_options.end());
    for (const std::string &option : {std::string("--out"), dir / "out", std::string("--format"),
                                      "json=" + (dir / "report.json"), std::string("--fail-on-leak")})
      arguments.push_back(option);
    arguments.push_back("--");
    arguments.insert(arguments.end(), c.command.begin(), c.command.end());
    auto run = run_process(arguments, c.environment);
    EXPECT_NE(run.exit_code, 23) << c.name;
    EXPECT_NE(run.err.find("SUMMARY: leaseguard: nothing was checked: " + c.said), std::string::npos) << c.name << "\n"
                                                                                                      << run.err;
    EXPECT_EQ(run.err.find("0 byte(s) leaked"), std::string::npos) << c.name << "\n" << run.err;
    EXPECT_NE(run.err.find("leaseguard: warning: --fail-on-leak had nothing to check: " + c.said), std::string::npos)
        << c.name << "\n"
        << run.err;
    JsonValue json;
    std::string error;
    ASSERT_TRUE(JsonValue::parse(read_text(dir / "report.json"), json, error)) << c.name << ": " << error;
    EXPECT_EQ(json["summary"]["observed"].as_string(), c.observed) << c.name;
  }
  // And one that allocated says so.
  TempDir dir;
  auto run = run_process({LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", dir / "out", "--format",
                          "json=" + (dir / "report.json"), "--", victim("direct_calls")});
  JsonValue json;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "report.json"), json, error)) << error;
  EXPECT_EQ(json["summary"]["observed"].as_string(), "allocations");
  EXPECT_EQ(json["processes"][0]["drivers"][0].as_string(), "cuda");
}

// SARIF validates against the 2.1.0 schema (tests/data/schemas) with and without stacks and
// source files, and carries what code scanning needs: a location with a relative path on
// every result, thread flows only where there are frames, the driver's version, and rules
// with full descriptions and help.
TEST(Cli, SarifValidatesAndCarriesWhatCodeScanningNeedsWithAndWithoutStacks) {
  const std::string schemas = std::string(LEASEGUARD_TEST_DATA) + "/schemas";
  const std::vector<std::vector<std::string>> variants = {
      {"--source-root", LEASEGUARD_SOURCE_ROOT},
      {"--stack-depth", "0", "--source-root", LEASEGUARD_SOURCE_ROOT},
      {"--stack-depth", "0"},
      {"--stack-depth", "1"},
  };
  for (const auto &variant : variants) {
    TempDir dir;
    std::vector<std::string> command = {"run", "--sim", "--quiet", "--format", "sarif", "--out", dir.path()};
    command.insert(command.end(), variant.begin(), variant.end());
    command.insert(command.end(), {"--", kPipeline});
    auto run = leaseguard(command);
    const std::string sarif = dir / "leaseguard-report.sarif";
    ASSERT_TRUE(std::filesystem::exists(sarif)) << run.err;
    auto valid = run_process({"/usr/bin/python3", schemas + "/validate.py", schemas + "/sarif-2.1.0.json", sarif});
    EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
    JsonValue document;
    std::string error;
    ASSERT_TRUE(JsonValue::parse(read_text(sarif), document, error)) << error;
    EXPECT_FALSE(document["$schema"].as_string().empty());
    const JsonValue &driver = document["runs"][0]["tool"]["driver"];
    EXPECT_FALSE(driver["version"].as_string().empty());
    EXPECT_FALSE(driver["rules"][0]["fullDescription"]["text"].as_string().empty());
    EXPECT_FALSE(driver["rules"][0]["help"]["text"].as_string().empty());
    const JsonValue &results = document["runs"][0]["results"];
    ASSERT_GT(results.size(), 0u);
    for (const auto &result : results.items()) {
      ASSERT_GE(result["locations"].size(), 1u) << read_text(sarif);
      const std::string uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_string();
      EXPECT_FALSE(uri.empty());
      if (std::find(variant.begin(), variant.end(), "--source-root") != variant.end()) {
        EXPECT_NE(uri.rfind("file:", 0), 0u) << uri;  // relative to SRCROOT
      }
    }
  }
}

TEST(Cli, GoldenFilesForEveryFormat) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> formats = {{"json", "json"},       {"sarif", "sarif"},
                                                                    {"junit", "junit.xml"}, {"folded", "folded"},
                                                                    {"html", "html"},       {"text", "txt"}};
  std::vector<std::string> arguments = {
      "run", "--sim", "--quiet", "--out", dir.path(), "--stack-depth", "2", "--source-root", LEASEGUARD_SOURCE_ROOT};
  for (const auto &[format, extension] : formats) {
    arguments.push_back("--format");
    arguments.push_back(format + "=" + (dir / ("report." + extension)));
  }
  arguments.push_back("--");
  arguments.push_back(kPipeline);
  ASSERT_EQ(leaseguard(arguments).exit_code, 0);
  for (const auto &[format, extension] : formats) {
    std::string golden_path = std::string(LEASEGUARD_GOLDEN) + "/formats/leaky_pipeline." + extension;
    std::string actual = normalize_any(read_text(dir / ("report." + extension)), dir.path());
    if (std::getenv("LEASEGUARD_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path) << actual;
    EXPECT_EQ(actual, read_text(golden_path)) << format;
  }
}

// JUnit validates against Jenkins' schema (tests/data/schemas) but for the `file` attribute
// GitLab reads, the one extension; each case has one failure holding all its leak groups,
// names that are the same from run to run, and `time`.
TEST(Cli, JunitValidatesAndEachCaseIsOneStableFailure) {
  const std::string schema = std::string(LEASEGUARD_TEST_DATA) + "/schemas/jenkins-junit-4.xsd";
  std::vector<std::string> names_of_runs[2];
  for (int round = 0; round < 2; ++round) {
    for (const char *depth : {"16", "0"}) {
      TempDir dir;
      auto run =
          leaseguard({"run", "--sim", "--quiet", "--stack-depth", depth, "--source-root", LEASEGUARD_SOURCE_ROOT,
                      "--format", "junit", "--out", dir.path(), "--", victim("reachability_catalogue"), "lease"});
      const std::string path = dir / "leaseguard-report.junit.xml";
      const std::string xml = read_text(path);
      ASSERT_FALSE(xml.empty()) << run.err;
      std::ofstream(dir / "strict.xml") << std::regex_replace(xml, std::regex(" file=\"[^\"]*\""), "");
      auto valid = run_process({"/usr/bin/xmllint", "--noout", "--schema", schema, dir / "strict.xml"});
      EXPECT_EQ(valid.exit_code, 0) << valid.err << xml;
      std::regex testcase(
          "<testcase classname=\"([^\"]*)\" name=\"([^\"]*)\" time=\"[0-9.]+\"( file=\"([^\"]*)\")?(/?)>");
      size_t cases = 0;
      for (auto it = std::sregex_iterator(xml.begin(), xml.end(), testcase); it != std::sregex_iterator(); ++it) {
        const std::smatch &m = *it;
        ++cases;
        EXPECT_EQ(std::regex_search(m[2].str(), std::regex("pid|lease [0-9]")), false) << m[2];
        if (std::string(depth) == "16" && m[5] != "/") {
          EXPECT_EQ(m[4].str(), "tests/victims/reachability_catalogue.cpp") << m[0];  // relative to the source root
        }
        if (std::string(depth) == "16") names_of_runs[round].push_back(m[1].str() + "/" + m[2].str());
      }
      EXPECT_EQ(cases, 2u) << xml;  // the explicit lease and the process's
      size_t failures = 0, cases_failed = 0;
      for (size_t at = xml.find("<failure "); at != std::string::npos; at = xml.find("<failure ", at + 1)) ++failures;
      for (size_t at = xml.find("\">\n      <failure"); at != std::string::npos;
           at = xml.find("\">\n      <failure", at + 1))
        ++cases_failed;
      EXPECT_EQ(failures, cases_failed) << xml;  // never two failures in one case
    }
  }
  EXPECT_EQ(names_of_runs[0], names_of_runs[1]);
}

// SARIF's required structure (2.1.0) and well-formed JUnit XML, beyond the golden files.
TEST(Cli, SarifAndJunitFollowTheirSchemas) {
  TempDir dir;
  auto direct =
      run_process({LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", dir.path(), "--format",
                   "sarif=" + (dir / "r.sarif"), "--format", "junit=" + (dir / "r.xml"), "--", victim("direct_calls")},
                  {{"LEASEGUARD_SIM_DEVICES", "2"}});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  JsonValue sarif;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "r.sarif"), sarif, error)) << error;
  EXPECT_EQ(sarif["version"].as_string(), "2.1.0");
  ASSERT_EQ(sarif["runs"].size(), 1u);
  const JsonValue &run = sarif["runs"][0];
  EXPECT_FALSE(run["tool"]["driver"]["name"].as_string().empty());
  std::set<std::string> rule_ids;
  for (const auto &rule : run["tool"]["driver"]["rules"].items()) rule_ids.insert(rule["id"].as_string());
  ASSERT_GT(run["results"].size(), 10u);
  for (const auto &result : run["results"].items()) {
    EXPECT_TRUE(rule_ids.count(result["ruleId"].as_string()));
    EXPECT_FALSE(result["message"]["text"].as_string().empty());
    EXPECT_EQ(result["partialFingerprints"]["leaseguardStack/v2"].as_string().size(), 16u);
    for (const auto &step : result["codeFlows"][0]["threadFlows"][0]["locations"].items())
      EXPECT_EQ(step["location"]["physicalLocation"]["artifactLocation"]["uri"].type(), JsonValue::Type::String);
  }
  // JUnit: elements nest and close properly, counts add up.
  std::string xml = read_text(dir / "r.xml");
  std::vector<std::string> open;
  std::regex tag("<(/?)(testsuites|testsuite|testcase|failure)\\b[^>]*?(/?)>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::smatch &m = *it;
    if (m[1] == "/") {
      ASSERT_FALSE(open.empty());
      ASSERT_EQ(open.back(), m[2].str());
      open.pop_back();
    } else if (m[3] != "/") {
      open.push_back(m[2].str());
    }
  }
  EXPECT_TRUE(open.empty());
  EXPECT_NE(xml.find("<testsuites name=\"leaseguard\" tests=\""), std::string::npos);
  EXPECT_EQ(xml.find("&&"), std::string::npos);
}

}  // namespace
}  // namespace leaseguard::testing
