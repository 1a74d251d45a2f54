// A journal whose file system fills up while the program runs: the leaks made after that
// have no records, so the lease endings and context destroys that end them count them, and
// the report's totals (and so `--fail-on-leak`) still include them.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "renderers.h"
#include "tracker_test_support.h"

namespace leaseguard {
namespace {

constexpr uint64_t kProcessLeaks = 6000;  // a 256 KiB journal holds ~3800 of them
constexpr uint64_t kJobLeaks = 5;
constexpr uint64_t kGoneWithTheContext = 3;  // in lease "gpu", context 0xC1, destroyed

// In a child, in a mount namespace of its own: records into a 256 KiB tmpfs until the
// journal is full and beyond, ending an explicit lease and destroying a context after it
// filled, then copies the journal out of the tmpfs to `copy`. Exit status 77: mounting is
// not allowed here.
void record_past_a_full_journal(const testing::TempDir &dir, const std::string &copy) {
  const std::string out = dir / "out";
  if (mkdir(out.c_str(), 0700) != 0 || unshare(CLONE_NEWNS) != 0 ||
      mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", out.c_str(), "tmpfs", 0, "size=256k,mode=0700") != 0)
    _exit(77);
  Options options = options_for(dir, 0);
  options.out_dir = out;
  std::string journal;
  {
    Tracker tracker(options);
    for (uint64_t i = 0; i < kProcessLeaks; ++i) tracker.on_alloc(event(0x100000 + i * 0x100, 10));
    const uint64_t job = tracker.lease_begin("job", 0, Policy::Report);
    if (tracker.lease_enter(job) != 0) _exit(2);
    for (uint64_t i = 0; i < kJobLeaks; ++i) tracker.on_alloc(event(0x9000000 + i * 0x1000, 1000));
    if (tracker.lease_end(job) != static_cast<int>(kJobLeaks)) _exit(3);
    const uint64_t gpu = tracker.lease_begin("gpu", 0, Policy::Report);
    if (tracker.lease_enter(gpu) != 0) _exit(5);
    for (uint64_t i = 0; i < kGoneWithTheContext; ++i) tracker.on_alloc(event(0xA000000 + i * 0x1000, 700, 0xC1));
    const ContextDestroyMark mark = tracker.before_context_destroy();
    tracker.on_context_destroyed(Api::cuCtxDestroy_v2, 0xC1, 0, mark);
    tracker.lease_leave();
    tracker.finish_process();
    journal = tracker.journal_path();
  }
  std::ifstream in(journal, std::ios::binary);
  std::ofstream(copy, std::ios::binary) << in.rdbuf();
  _exit(in ? 0 : 4);
}

TEST(FullJournal, LeaksMadeAfterItFilledAreCountedWhereverTheyEnd) {
  testing::TempDir dir;
  const std::string copy = dir / "copy.journal";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) record_past_a_full_journal(dir, copy);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  ASSERT_EQ(WEXITSTATUS(status), 0);

  report::ProcessReport process;
  std::string error;
  ASSERT_TRUE(report::load_journal(copy, process, error)) << error;
  ASSERT_TRUE(process.journal_full_ms.has_value());
  ASSERT_EQ(process.leases.size(), 4u);  // job, the context's destroy, gpu and the process at exit
  const report::LeaseEnding &job = process.leases[0];
  EXPECT_EQ(job.name, "lease");  // its begin came after the journal filled
  EXPECT_TRUE(job.leaks.empty());
  EXPECT_EQ(job.unjournaled_allocations, kJobLeaks);
  EXPECT_EQ(job.unjournaled_bytes, kJobLeaks * 1000);
  const report::LeaseEnding &destroyed = process.leases[1];
  EXPECT_EQ(destroyed.ended_by, EndedBy::ContextDestroy);
  EXPECT_EQ(destroyed.id, 3u);
  EXPECT_TRUE(destroyed.leaks.empty());
  EXPECT_EQ(destroyed.unjournaled_allocations, kGoneWithTheContext);
  EXPECT_EQ(destroyed.unjournaled_bytes, kGoneWithTheContext * 700);
  EXPECT_EQ(process.leases[2].leaked_allocations(), 0u) << "gone with the context, not leaked again at exit";
  const report::LeaseEnding &whole = process.leases[3];
  EXPECT_GT(whole.leaks.size(), 1000u);
  EXPECT_GT(whole.unjournaled_allocations, 1000u);
  EXPECT_EQ(whole.leaks.size() + whole.unjournaled_allocations, kProcessLeaks);
  EXPECT_EQ(whole.unjournaled_bytes, whole.unjournaled_allocations * 10);
  EXPECT_EQ(process.leaked_allocations(), kProcessLeaks + kJobLeaks + kGoneWithTheContext);
  EXPECT_EQ(process.leaked_bytes(), kProcessLeaks * 10 + kJobLeaks * 1000 + kGoneWithTheContext * 700);

  report::Report report;
  report.processes.push_back(process);
  const std::string text = report::render_text(report);
  EXPECT_NE(text.find("Leak of 5000 byte(s) in 5 allocation(s) made while the journal was full"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "SUMMARY: leaseguard: " + std::to_string(kProcessLeaks * 10 + kJobLeaks * 1000 + kGoneWithTheContext * 700) +
          " byte(s) leaked in " + std::to_string(kProcessLeaks + kJobLeaks + kGoneWithTheContext) + " allocation(s)."),
      std::string::npos)
      << text;
  EXPECT_NE(report::render_junit(report).find("made while the journal was full"), std::string::npos);
  EXPECT_NE(report::render_sarif(report, "").find("made while the journal was full"), std::string::npos);

  // A JSON report read back (merged into another report) keeps them.
  const std::string json_path = dir / "r.json";
  std::ofstream(json_path) << report::render_json(report);
  report::Report merged;
  ASSERT_TRUE(report::load_report_json(json_path, merged, error)) << error;
  ASSERT_EQ(merged.processes.size(), 1u);
  EXPECT_EQ(merged.leaked_allocations(), kProcessLeaks + kJobLeaks + kGoneWithTheContext);
  EXPECT_EQ(merged.processes[0].leases[0].unjournaled_bytes, kJobLeaks * 1000);
}

}  // namespace
}  // namespace leaseguard
