// A GoogleTest event listener that gives each test its own lease, so a leak is attributed to
// the test that made it, and (optionally) fails that test.
//
//   int main(int argc, char **argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     leaseguard::install_lease_per_test({.fail_on_leak = true});
//     return RUN_ALL_TESTS();
//   }
//
// A leak fails the test at the test's own file and line. Each test's lease is classified at
// its end, as the run's report classifies it: memory the test left for later and a global
// still reaches (a workspace, a cuBLAS handle, a cache) is reachable, and fails nothing.
// Under `leaseguard run --suppressions` (LEASEGUARD_SUPPRESSIONS set) it fails nothing in the
// process: suppressions match symbolized frames, which only the report has, so the run's
// --fail-on-leak and the test's lease in the JUnit report are the verdict, and a suppressed
// leak fails nothing.
//
// Header-only and built on <leaseguard/annotate.h>: without the preload it does nothing, so
// the same test binary runs with and without leaseguard. Leases are named
// "Suite.Test" and attributed to the thread that runs the test (threads the test starts
// allocate into the process lease unless they enter the lease themselves).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "leaseguard/annotate.h"

namespace leaseguard {

struct LeasePerTestOptions {
  bool fail_on_leak = false;  // a test that leaves device memory allocated fails
};

class LeasePerTestListener : public ::testing::EmptyTestEventListener {
 public:
  explicit LeasePerTestListener(LeasePerTestOptions options = {}) : options_(options) {}

  void OnTestStart(const ::testing::TestInfo &test) override {
    std::string name = std::string(test.test_suite_name()) + "." + test.name();
    // Classified at its end: memory the test left for later (a workspace a global keeps, a
    // cuBLAS handle) is reachable, not its leak, as the run's report calls it.
    lease_ = LEASEGUARD_LEASE_BEGIN(name.c_str(), 0, LEASEGUARD_REPORT | LEASEGUARD_CLASSIFY_AT_END);
    if (lease_ != 0) LEASEGUARD_LEASE_ENTER(lease_);
  }

  // GoogleTest calls OnTestEnd on listeners in reverse order of registration, so this runs
  // before the default printer reports the result, and a failure added here shows in it.
  void OnTestEnd(const ::testing::TestInfo &test) override {
    if (lease_ == 0) return;
    LEASEGUARD_LEASE_LEAVE();
    int leaked = LEASEGUARD_LEASE_END(lease_);
    lease_ = 0;
    if (leaked <= 0 || !options_.fail_on_leak) return;
    const std::string name = std::string(test.test_suite_name()) + "." + test.name();
    // Suppressions (leaseguard run --suppressions) match symbolized frames, which only the
    // report has: under them the verdict is the run's (--fail-on-leak, and this lease's
    // JUnit case), never a failure here for a leak the report may silence.
    const char *suppressions = std::getenv("LEASEGUARD_SUPPRESSIONS");
    if (suppressions != nullptr && *suppressions != '\0') {
      std::printf("[ leaseguard ] %s left %d device allocation(s); the report applies %s to them\n", name.c_str(),
                  leaked, suppressions);
      return;
    }
    // At the test, not at this header.
    ADD_FAILURE_AT(test.file(), test.line()) << "leaseguard: " << name << " leaked " << leaked
                                             << " device allocation(s); see the leaseguard report for their stacks";
  }

 private:
  LeasePerTestOptions options_;
  leaseguard_lease_t lease_ = 0;
};

// Appends a LeasePerTestListener to GoogleTest's listeners (which own it).
inline void install_lease_per_test(LeasePerTestOptions options = {}) {
  ::testing::UnitTest::GetInstance()->listeners().Append(new LeasePerTestListener(options));
}

}  // namespace leaseguard
