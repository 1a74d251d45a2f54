// A tree of 50 processes made by fork, posix_spawn and vfork + exec under one
// `leaseguard run`: every process is reported, each with its own leak and nobody else's, and
// the tree's shape survives in the report (tests/victims/process_tree.c).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

TEST(ProcessTree, FiftyProcessesEachReportTheirOwnLeak) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("process_tree")}, {}, kForkedChildrenInherit);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("process_tree done"), std::string::npos);
  const auto &processes = run.json["processes"];
  ASSERT_EQ(processes.size(), 50u);
  std::set<double> pids;
  std::set<double> ids;
  std::map<double, double> parent_of;
  double root_pid = 0;
  for (const auto &process : processes.items()) {
    EXPECT_TRUE(process["complete"].as_bool());
    pids.insert(process["pid"].as_number());
    parent_of[process["pid"].as_number()] = process["ppid"].as_number();
    std::multiset<double> sizes;
    for (const auto &lease : process["leases"].items())
      for (const auto &leak : lease["leaks"].items()) sizes.insert(leak["bytes"].as_number());
    ASSERT_FALSE(sizes.empty());
    const double id = *sizes.begin() - 2000;
    ids.insert(id);
    if (id == 0) {
      root_pid = process["pid"].as_number();
      // The thread that exited with a live allocation; the one freed on another thread is gone.
      EXPECT_EQ(sizes, (std::multiset<double>{2000, 3000}));
    } else {
      EXPECT_EQ(sizes.size(), 1u) << "process " << id << " reports another process's leak";
    }
  }
  EXPECT_EQ(pids.size(), 50u);
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), 49);
  // Every process but the root descends from a process of the tree.
  for (const auto &[pid, ppid] : parent_of) {
    if (pid != root_pid) {
      EXPECT_EQ(pids.count(ppid), 1u) << pid << " has parent " << ppid;
    }
  }
}

}  // namespace
}  // namespace leaseguard::testing
