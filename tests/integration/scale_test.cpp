// A report of a journal of 1,000,000 allocations and 100,000 leaks completes with bounded
// memory (the budget, 1 GiB, is checked in unsanitized builds; its time is printed, never
// asserted).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "../../bench/million_allocations.h"
#include "process_runner.h"
#include "tracker.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

// A journal of 1,000,000 allocations and 100,000 leaks (bench/million_allocations.h) in `directory`.
void write_million_allocation_journal(const std::string &directory) {
  Options options;
  options.out_dir = directory;
  options.run_id = "scale";
  options.stack_depth = 4;
  options.log_level = LogLevel::Quiet;
  Tracker tracker(options);
  record_million_allocations(tracker);
  tracker.finish_process();
}

TEST(Scale, ReportOfAMillionAllocationJournalHasBoundedMemory) {
  TempDir dir;
  write_million_allocation_journal(dir.path());
  auto started = std::chrono::steady_clock::now();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string format = "json=" + (dir / "r.json");
    execl(LEASEGUARD_BIN, "leaseguard", "report", "--quiet", "--format", format.c_str(), dir.path().c_str(),
          (char *)nullptr);
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(wait4(child, &status, 0, &usage), child);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  double peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  std::cout << "[ figures  ] report of 1e6 allocations / 1e5 leaks: " << seconds << " s, peak " << peak_mib << " MiB"
            << std::endl;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(peak_mib, 1024.0);
#endif
}

// Whether process `pid` has a file open in `directory` (a report it is writing: named, or
// unnamed with O_TMPFILE, which /proc shows as "DIRECTORY/#INODE (deleted)").
bool writes_into(pid_t pid, const std::string &directory) {
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    std::error_code unreadable;
    const std::string target = std::filesystem::read_symlink(entry.path(), unreadable).string();
    if (!unreadable && target.rfind(directory + "/", 0) == 0) return true;
  }
  return false;
}

// A report killed while it writes leaves nothing behind: no temporary file of hundreds of MB
// (one was left before), only the complete report where it finished first.
TEST(Scale, AReportKilledWhileItWritesLeavesNoFileBehind) {
  TempDir dir;
  write_million_allocation_journal(dir.path());
  const std::string reports = dir / "reports";
  std::filesystem::create_directory(reports);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string format = "json=" + reports + "/r.json";
    execl(LEASEGUARD_BIN, "leaseguard", "report", "--quiet", "--format", format.c_str(), dir.path().c_str(),
          (char *)nullptr);
    _exit(127);
  }
  int status = 0;
  while (!writes_into(child, reports) && waitpid(child, &status, WNOHANG) == 0) std::this_thread::yield();
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  for (const auto &entry : std::filesystem::directory_iterator(reports))
    EXPECT_EQ(entry.path().filename(), "r.json") << "left behind";
}

}  // namespace
}  // namespace leaseguard::testing

namespace leaseguard::testing {
namespace {

// The symbolized JSON `run` keeps beside its journals for baselines (leaseguard-run.json)
// stays of the journals' order of size with many leaks from a few deep stacks in a module
// with a long path: each distinct stack is written once. With every stack in place, 100,000
// leaks made it 863 MB beside a 12 MB journal. Read back as a baseline, it matches them all.
TEST(Scale, TheRunsOwnReportKeepsEachStackOnce) {
  TempDir dir;
  std::string deep = dir.path();
  for (int level = 0; level < 4; ++level)
    deep += "/a_directory_with_a_name_long_enough_to_matter_" + std::to_string(level);
  std::filesystem::create_directories(deep);
  const std::string program = deep + "/report_shapes";
  std::filesystem::copy_file(victim("report_shapes"), program);
  const std::string out = dir / "out";
  auto run =
      run_process({LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", out, "--", program, "many", "20000", "20"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string run_dir = out + "/" + std::filesystem::read_symlink(out + "/latest").string();
  uintmax_t journals = 0;
  for (const auto &entry : std::filesystem::directory_iterator(run_dir))
    if (entry.path().extension() == ".journal") journals += entry.file_size();
  const uintmax_t kept = std::filesystem::file_size(run_dir + "/leaseguard-run.json");
  EXPECT_LT(kept, 4 * journals) << kept << " bytes of JSON beside " << journals << " bytes of journal";
  auto summary_of = [&](std::vector<std::string> arguments, const std::string &file) {
    arguments.insert(arguments.begin(), {LEASEGUARD_BIN, "report", "--quiet", out, "--format", "json=" + file});
    auto result = run_process(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    report::JsonValue json;
    std::string error;
    EXPECT_TRUE(report::JsonValue::parse(read_text(file), json, error)) << error;
    return json;
  };
  // What the run found lost (a few of the 20,000 may read reachable through stale words):
  // the baseline is the run itself, so all of it is in the baseline and nothing is new.
  const report::JsonValue alone = summary_of({}, dir / "alone.json");
  const double lost = alone["summary"]["leaked_allocations"].as_number();
  EXPECT_GT(lost, 19000);
  const report::JsonValue again = summary_of({"--baseline", out}, dir / "again.json");
  EXPECT_EQ(again["summary"]["leaked_allocations"].as_number(), 0);
  EXPECT_EQ(again["summary"]["baseline_allocations"].as_number(), lost);
}

}  // namespace
}  // namespace leaseguard::testing
