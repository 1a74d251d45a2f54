// The classification reads the program's memory and never touches what it may not: no guard
// page, no memory unmapped behind the driver's back, no page a userfaultfd thread serves, no
// page never touched. Each case runs the same program without leaseguard as the control: the
// same exit status and output (tests/victims/careful_reads.c; docs/reliability.md).
#include <gtest/gtest.h>

#include <map>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

struct Outcome {
  RunResult plain;
  LeaseguardRun run;
};

Outcome run_both(const TempDir &dir, const std::string &mode, const std::vector<std::string> &options = {}) {
  const std::vector<std::string> command = {victim("careful_reads"), mode};
  Outcome outcome{run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}}), {}};
  outcome.run = run_under_leaseguard(dir / "out", command, options);
  return outcome;
}

// Registered host memory unmapped without cuMemHostUnregister: the registration stays live
// (and is reported), its pages are gone. Before: SIGSEGV at exit.
TEST(CarefulReads, RegisteredMemoryUnmappedBehindTheDriversBackIsNotRead) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "registered_unmapped");
  EXPECT_EQ(outcome.plain.exit_code, 0);
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json).at(7701), "direct") << outcome.run.result.err;
}

// A heap block with a PROT_NONE guard page in its middle: the pages around it are read, the
// guard is not. Before: SIGSEGV at exit, the program's piped output lost.
TEST(CarefulReads, AHeapBlockWithAGuardPageIsReadAroundIt) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "guard_block");
  EXPECT_EQ(outcome.plain.exit_code, 0);
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json), (std::map<uint64_t, std::string>{{7801, "reachable"}, {7802, "direct"}}))
      << outcome.run.result.err;
}

// MADV_GUARD_INSTALL guards a page that /proc/PID/maps still shows rw-p. Before: SIGSEGV.
TEST(CarefulReads, APageGuardedByMadviseIsNotRead) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "guard_install");
  EXPECT_EQ(outcome.plain.exit_code, 0);
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json), (std::map<uint64_t, std::string>{{7901, "reachable"}, {7902, "direct"}}))
      << outcome.run.result.err;
}

// A region a userfaultfd thread serves: its pages never touched are not read (the read would
// wait for the server, which the stop holds). Before: a hang at exit.
TEST(CarefulReads, PagesAUserfaultfdThreadWouldServeAreNotRead) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "userfaultfd");
  if (outcome.plain.exit_code == 77) GTEST_SKIP() << "no userfaultfd here";
  EXPECT_EQ(outcome.plain.exit_code, 0);
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json), (std::map<uint64_t, std::string>{{8001, "reachable"}, {8002, "direct"}}))
      << outcome.run.result.err;
}

// A sparse 256 MiB shared ring with one page touched: a lease's classification reads that page
// and commits no other. Before: RssShmem went from 4 kB to 256 MiB (in a 256 MiB memory
// cgroup, with a 1 GiB ring, the program was OOM-killed).
TEST(CarefulReads, ASparseSharedRingIsNotCommittedByTheScan) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "sparse_ring", {"--reachability", "leases"});
  EXPECT_EQ(outcome.plain.out, "RssShmem stayed small\n");
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json).at(8102), "direct") << outcome.run.result.err;
}

// The siblings: a 1 GiB private MAP_NORESERVE reservation with one page touched is not
// committed; a page sealed with mseal and a transparent huge page are read like any other.
TEST(CarefulReads, ReservationsSealedPagesAndHugePagesAreReadAsTheyShouldBe) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "siblings", {"--reachability", "leases"});
  EXPECT_EQ(outcome.plain.out, "RssAnon stayed small\n");
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  EXPECT_EQ(outcome.run.result.out, outcome.plain.out);
  EXPECT_EQ(classes_by_size(outcome.run.json),
            (std::map<uint64_t, std::string>{{8201, "reachable"}, {8202, "reachable"}, {8203, "direct"}}))
      << outcome.run.result.err;
}

// Fresh device memory on the simulator lives in the host heap, and once showed what a freed
// host block had held there: here, another buffer's address, which made 200 of 400 dropped,
// never-written buffers `indirect`. Every one is `direct`.
TEST(CarefulReads, NeverWrittenDeviceBuffersHoldNoPointers) {
  TempDir dir;
  const Outcome outcome = run_both(dir, "fresh_device");
  EXPECT_EQ(outcome.run.result.exit_code, 0) << outcome.run.result.err;
  std::map<std::string, int> classes;
  for (const JsonValue *leak : all_leaks(outcome.run.json)) ++classes[(*leak)["reachability"].as_string()];
  EXPECT_EQ(classes, (std::map<std::string, int>{{"direct", 400}})) << outcome.run.result.err;
}

}  // namespace
}  // namespace leaseguard::testing
