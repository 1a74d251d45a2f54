// A classification holds the program's threads still, and the program never notices: no call
// returns EINTR, no signal is sent (so none a seccomp filter denies), no handler runs on a
// thread's stack. Each case runs the same program without leaseguard as the control: the same
// exit status and output (tests/victims/quiet_stop.c; docs/reliability.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;

RunResult without_leaseguard(const std::vector<std::string> &command) {
  return run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
}

// Threads wait in every kind of blocking call while two leases end, each classified with
// every thread held. The calls the kernel would end with EINTR after a stop (epoll_wait,
// epoll_pwait, sigtimedwait) run again instead, as do the others: each returns what it
// waited for.
TEST(QuietStop, NoWaitingCallReturnsEintrWhenALeaseEndIsClassified) {
  TempDir dir;
  const std::vector<std::string> command = {victim("quiet_stop"), "waits"};
  const RunResult plain = without_leaseguard(command);
  auto run = run_under_leaseguard(dir / "out", command, {"--reachability", "leases"});
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  EXPECT_FALSE(run.json["processes"][0]["reachability"]["threads_not_stopped"].as_bool()) << run.result.err;
  EXPECT_EQ(classes_by_size(run.json), (std::map<uint64_t, std::string>{{7201, "direct"}, {7202, "direct"}}));
}

// No signal handler, a worker in epoll_wait when the program exits: the exit scan holds it
// without waking it (before, it woke with EINTR, and the program failed).
TEST(QuietStop, TheExitScanLeavesAWorkerInEpollWaitAsleep) {
  TempDir dir;
  const std::vector<std::string> command = {victim("quiet_stop"), "exit_wait"};
  const RunResult plain = without_leaseguard(command);
  auto run = run_under_leaseguard(dir / "out", command);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  EXPECT_EQ(classes_by_size(run.json), (std::map<uint64_t, std::string>{{7301, "reachable"}, {7302, "direct"}}))
      << run.result.err;
}

// The process lease's TTL ends (and is classified) while one thread polls and another sleeps,
// each with a timeout: both run out their time and return 0, as without leaseguard.
TEST(QuietStop, ATtlsClassificationInterruptsNoTimedWait) {
  TempDir dir;
  const std::vector<std::string> command = {victim("quiet_stop"), "ttl_waits"};
  const RunResult plain = without_leaseguard(command);
  auto run = run_under_leaseguard(dir / "out", command, {"--ttl", "300ms"});
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
}

// A seccomp filter denies tgkill, which a stop by signal needed: the stop sends none, so in
// errno mode the waiting thread's allocation is still found reachable (it was reported a
// direct leak), and in kill mode the program is not killed by SIGSYS.
TEST(QuietStop, ASeccompFilterThatDeniesTgkillChangesNothing) {
  for (const char *mode : {"errno", "kill"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const std::vector<std::string> command = {victim("quiet_stop"), "seccomp", mode};
    const RunResult plain = without_leaseguard(command);
    if (plain.exit_code == 77) GTEST_SKIP() << "seccomp filters cannot be installed here";
    auto run = run_under_leaseguard(dir / "out", command);
    EXPECT_EQ(plain.exit_code, 0);
    EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
    EXPECT_EQ(run.result.out, plain.out);
    EXPECT_EQ(classes_by_size(run.json), (std::map<uint64_t, std::string>{{7401, "reachable"}, {7402, "direct"}}))
        << run.result.err;
  }
}

// A thread with the smallest stack, 3.3 KiB of it left, waits as the exit scan runs: nothing
// runs on its stack (a stop's signal handler frame overflowed it: SIGSEGV).
TEST(QuietStop, AThreadWithLittleStackLeftIsHeldWithoutTouchingIt) {
  TempDir dir;
  const std::vector<std::string> command = {victim("quiet_stop"), "small_stack"};
  const RunResult plain = without_leaseguard(command);
  auto run = run_under_leaseguard(dir / "out", command);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  EXPECT_EQ(classes_by_size(run.json), (std::map<uint64_t, std::string>{{7501, "reachable"}, {7502, "direct"}}))
      << run.result.err;
}

// A thread waits in connect (with a send timeout, which a stop would end with EINTR, and
// which cannot be run again) while a lease is classified: it is not stopped, its connect
// completes as without leaseguard, and the lease's lost allocation is `unchecked`, with the
// reason, since that thread's registers were not read.
TEST(QuietStop, AThreadWaitingInConnectIsLeftToIt) {
  TempDir dir;
  const std::vector<std::string> command = {victim("quiet_stop"), "connect_wait"};
  const RunResult plain = without_leaseguard(command);
  auto run = run_under_leaseguard(dir / "out", command, {"--reachability", "leases"});
  EXPECT_EQ(plain.out, "connect: ok\n");
  EXPECT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  EXPECT_EQ(classes_by_size(run.json).at(7701), "unchecked") << run.result.err;
  EXPECT_NE(run.result.err.find("waited in connect()"), std::string::npos) << run.result.err;
}

}  // namespace
}  // namespace leaseguard::testing
