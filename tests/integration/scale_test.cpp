// A report of a journal of 1,000,000 allocations and 100,000 leaks completes with bounded
// memory (the budget, 1 GiB, is checked in unsanitized builds; its time is printed, never
// asserted).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "../../bench/million_allocations.h"
#include "process_runner.h"
#include "tracker.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

TEST(Scale, ReportOfAMillionAllocationJournalHasBoundedMemory) {
  TempDir dir;
  {
    Options options;
    options.out_dir = dir.path();
    options.run_id = "scale";
    options.stack_depth = 4;
    options.log_level = LogLevel::Quiet;
    Tracker tracker(options);
    record_million_allocations(tracker);
    tracker.finish_process();
  }
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

}  // namespace
}  // namespace leaseguard::testing
