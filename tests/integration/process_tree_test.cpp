// A tree of 50 processes made by fork, posix_spawn and vfork + exec under one
// `leaseguard run`: every process is reported, each with its own leak and nobody else's, and
// the tree's shape survives in the report (tests/victims/process_tree.c).
#include <gtest/gtest.h>

#include <filesystem>
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

// Two processes of one run, each started in a PID namespace of its own, are both pid 1 there,
// with parent pid 0. Each is a process of its own in the report, with its own leaks, and
// neither is taken for an exec'd image of the other; their journals are named apart.
TEST(ProcessTree, TwoProcessesInTwoPidNamespacesAreTwoProcesses) {
  if (run_process({"/usr/bin/unshare", "--pid", "--fork", "/bin/true"}).exit_code != 0)
    GTEST_SKIP() << "no PID namespace can be made here (unshare --pid needs CAP_SYS_ADMIN)";
  TempDir dir;
  const std::string in_a_namespace = "/usr/bin/unshare --pid --fork " + victim("lease_accounting") + " static-end";
  auto run = run_under_leaseguard(dir.path(), {"/bin/sh", "-c", in_a_namespace + " & " + in_a_namespace + "; wait"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto &processes = run.json["processes"];
  ASSERT_EQ(processes.size(), 2u) << run.result.err;
  std::set<double> namespaces;
  for (const auto &process : processes.items()) {
    EXPECT_EQ(process["pid"].as_number(), 1);
    EXPECT_EQ(process["ppid"].as_number(), 0);
    EXPECT_FALSE(process["exec"].as_bool());
    EXPECT_TRUE(process["complete"].as_bool());
    namespaces.insert(process["pid_namespace"].as_number());
    size_t leaks = 0;
    for (const auto &lease : process["leases"].items()) leaks += lease["leaks"].size();
    EXPECT_EQ(leaks, 26u) << "one process reports the other's leaks, or its own are missing";
  }
  EXPECT_EQ(namespaces.size(), 2u);
  // The text says which namespace each pid 1 is in.
  EXPECT_NE(run.result.err.find("==1==process 1 in PID namespace "), std::string::npos) << run.result.err;
  size_t qualified = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir.path() + "/latest"))
    qualified += entry.path().filename().string().find(".1-ns") != std::string::npos ? 1 : 0;
  EXPECT_EQ(qualified, 2u);
}

}  // namespace
}  // namespace leaseguard::testing
