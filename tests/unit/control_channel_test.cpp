// The control page (tools/authority/protocol/control_page.h): the node lease authority's
// request reaches the control thread of a process of its lease, which ends the process's leases
// with their memory given back and answers in its journal, and the daemon writes nothing that
// is not a control page of the lease's owner; `leaseguard check`'s requests reach every process
// that records, each answered with a check, as often as asked. Every wait is on an event (a
// promise, the journal's answer, the page's answer), never on a time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "control_channel.h"
#include "authority_protocol.h"
#include "check_request.h"
#include "reachability.h"
#include "live_bytes.h"
#include "reclaim_request.h"
#include "test_support.h"
#include "tracker.h"
#include "tracker_test_support.h"

namespace leaseguard {
namespace {

constexpr uint32_t kReclaimAtExpiry = authority::kControlReclaim | static_cast<uint32_t>(EndedBy::Expiry);

TEST(ControlChannel, TheControlPageSitsBesideTheJournal) {
  EXPECT_EQ(authority::control_path_of_journal("/out/run.42.journal"), "/out/run.42.control");
  EXPECT_EQ(authority::control_path_of_journal("/out/run.42.1.journal"), "/out/run.42.1.control");
  EXPECT_EQ(authority::control_path_of_journal("/out/run.42"), "");
  EXPECT_EQ(authority::control_path_of_journal(".journal"), "");
}

TEST(ControlChannel, ARequestReachesTheThreadOnceAndItEnds) {
  testing::TempDir dir;
  ControlChannel control;
  std::promise<uint32_t> served;
  std::atomic<int> calls{0};
  std::string error;
  ASSERT_TRUE(control.start(
      dir / "run.42.journal", {},
      [&](uint32_t request) {
        if (calls.fetch_add(1) == 0) served.set_value(request);
      },
      error))
      << error;
  ASSERT_EQ(control.path(), dir / "run.42.control");
  struct stat status {};
  ASSERT_EQ(stat(control.path().c_str(), &status), 0);
  EXPECT_EQ(status.st_size, static_cast<off_t>(authority::kControlPageBytes));
  EXPECT_EQ(status.st_mode & 0777, 0600u);

  ASSERT_TRUE(authority::ask_to_reclaim(control.path(), getuid(), kReclaimAtExpiry, error)) << error;
  EXPECT_EQ(served.get_future().get(), kReclaimAtExpiry);
  // Asked again (a restarted daemon asks once more): the process served its one request.
  EXPECT_TRUE(authority::ask_to_reclaim(control.path(), getuid(), kReclaimAtExpiry, error)) << error;
  control.stop();
  EXPECT_EQ(calls.load(), 1);
}

TEST(ControlChannel, ARequestWrittenWhileTheThreadIsSuspendedIsServedOnResuming) {
  testing::TempDir dir;
  ControlChannel control;
  std::promise<uint32_t> served;
  std::string error;
  ASSERT_TRUE(control.start(
      dir / "run.7.journal", {}, [&](uint32_t request) { served.set_value(request); }, error))
      << error;
  control.suspend();  // as around unshare(CLONE_NEWUSER): the thread is joined
  ASSERT_TRUE(authority::ask_to_reclaim(control.path(), getuid(), kReclaimAtExpiry, error)) << error;
  control.resume();
  EXPECT_EQ(served.get_future().get(), kReclaimAtExpiry);
  control.stop();
}

TEST(ControlChannel, StoppingNeverWaitsForARequestThatDoesNotCome) {
  // The thread's leave must not be lost between its look at the word and its wait: a lost
  // one would hang stop() (and the process's exit) here.
  testing::TempDir dir;
  for (int round = 0; round < 500; ++round) {
    ControlChannel control;
    std::string error;
    ASSERT_TRUE(control.start(
        dir / ("run." + std::to_string(round) + ".journal"), {}, [](uint32_t) {}, error))
        << error;
    if (round % 2 == 0) std::this_thread::yield();
    if (round % 3 == 0) {
      control.suspend();
      control.resume();
    }
    control.stop();
  }
}

TEST(ControlChannel, AControlPageIsNeverOneThatWasThere) {
  testing::TempDir dir;
  std::ofstream(dir / "run.9.control") << "planted";
  ASSERT_EQ(symlink((dir / "elsewhere").c_str(), (dir / "run.10.control").c_str()), 0);
  ControlChannel planted, linked;
  std::string error;
  EXPECT_FALSE(planted.start(
      dir / "run.9.journal", {}, [](uint32_t) {}, error));
  EXPECT_NE(error.find("cannot create the control page"), std::string::npos) << error;
  EXPECT_FALSE(linked.start(
      dir / "run.10.journal", {}, [](uint32_t) {}, error));
  struct stat status {};
  EXPECT_NE(lstat((dir / "elsewhere").c_str(), &status), 0);  // nothing made through the link
}

TEST(ControlChannel, TheDaemonWritesOnlyAControlPageOfTheLeasesOwner) {
  testing::TempDir dir;
  ControlChannel control;
  std::string error;
  ASSERT_TRUE(control.start(
      dir / "run.5.journal", {}, [](uint32_t) {}, error))
      << error;

  // Another user's page (the owner check), a link to the page, a FIFO (never waited on), a
  // file of another size, a file of the right size without the page's magic, no file.
  EXPECT_FALSE(authority::ask_to_reclaim(control.path(), getuid() + 1, kReclaimAtExpiry, error));
  EXPECT_NE(error.find("not a control page of the lease's owner"), std::string::npos) << error;
  ASSERT_EQ(symlink(control.path().c_str(), (dir / "link.control").c_str()), 0);
  EXPECT_FALSE(authority::ask_to_reclaim(dir / "link.control", getuid(), kReclaimAtExpiry, error));
  ASSERT_EQ(mkfifo((dir / "fifo.control").c_str(), 0600), 0);
  EXPECT_FALSE(authority::ask_to_reclaim(dir / "fifo.control", getuid(), kReclaimAtExpiry, error));
  std::ofstream(dir / "short.control") << "LGCONTRL";
  EXPECT_FALSE(authority::ask_to_reclaim(dir / "short.control", getuid(), kReclaimAtExpiry, error));
  {
    std::ofstream zeros(dir / "zeros.control");
    zeros << std::string(authority::kControlPageBytes, '\0');
  }
  EXPECT_FALSE(authority::ask_to_reclaim(dir / "zeros.control", getuid(), kReclaimAtExpiry, error));
  EXPECT_NE(error.find("not a control page of this version"), std::string::npos) << error;
  std::string untouched(authority::kControlPageBytes, 'x');
  std::ifstream(dir / "zeros.control").read(untouched.data(), static_cast<std::streamsize>(untouched.size()));
  EXPECT_EQ(untouched, std::string(authority::kControlPageBytes, '\0'));
  EXPECT_FALSE(authority::ask_to_reclaim(dir / "none.control", getuid(), kReclaimAtExpiry, error));
  control.stop();
}

class CountingBackend : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override {
    released.fetch_add(1);
    return record.address == refuse_address ? 999 : 0;
  }
  std::atomic<int> released{0};
  uint64_t refuse_address = 0;
};

// Reads the journal as the daemon does until the process's answer is there.
journal::AuthorityReclaimPayload wait_for_answer(journal::LiveBytesReader &reader) {
  for (;;) {
    reader.update();
    if (reader.reclaim_answer()) return *reader.reclaim_answer();
    std::this_thread::yield();
  }
}

TEST(ControlChannel, AProcessAskedToReclaimEndsEveryLeaseGivesItsMemoryBackAndAnswersInItsJournal) {
  testing::TempDir dir;
  Options options = options_for(dir);
  options.authority_lease = "3";
  Tracker tracker(options);
  CountingBackend backend;
  backend.refuse_address = 0x5000;
  tracker.set_reclaim_backend(&backend);
  // The process lease (policy report) and a lease of the program's own, still open.
  tracker.on_alloc(event(0x1000, 1000));
  tracker.on_alloc(event(0x2000, 2000));
  tracker.on_alloc(event(0x3000, 300, 0xC0, Kind::Host));  // pinned host memory: given back, not device bytes
  const uint64_t scope = tracker.lease_begin("scope", 0, Policy::Report);
  ASSERT_EQ(tracker.lease_enter(scope), 0);
  tracker.on_alloc(event(0x4000, 4000));
  tracker.on_alloc(event(0x5000, 5000));  // the driver refuses to free this one
  ASSERT_EQ(tracker.lease_leave(), 0);
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x2000), FreeOutcome::Known);

  journal::LiveBytesReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(tracker.journal_path(), getuid(), error)) << error;
  reader.update();
  EXPECT_EQ(reader.live_bytes_per_device().at(0), 10000u);
  const std::string control = authority::control_path_of_journal(tracker.journal_path());
  ASSERT_TRUE(authority::ask_to_reclaim(control, getuid(), kReclaimAtExpiry, error)) << error;

  const journal::AuthorityReclaimPayload answer = wait_for_answer(reader);
  EXPECT_EQ(answer.request, kReclaimAtExpiry);
  EXPECT_EQ(answer.leases, 2u);
  EXPECT_EQ(answer.freed_allocations, 3u);
  EXPECT_EQ(answer.freed_bytes, 5000u);  // 1000 + 4000 of device memory
  EXPECT_EQ(answer.failed_allocations, 1u);
  EXPECT_EQ(backend.released.load(), 4);
  EXPECT_EQ(reader.live_bytes_per_device().at(0), 5000u);  // the refused one is still held
  EXPECT_EQ(tracker.lease_state(kProcessLeaseId), LeaseState::Expired);
  EXPECT_EQ(tracker.lease_state(scope), LeaseState::Expired);
  // The program's late free of reclaimed memory is kept from the driver, as after any reclaim.
  EXPECT_EQ(tracker.on_free(Api::cuMemFree_v2, 0x1000), FreeOutcome::Reclaimed);
  tracker.finish_process();

  const report::ProcessReport process = replay(tracker);
  ASSERT_EQ(process.leases.size(), 2u);
  for (const report::LeaseEnding &lease : process.leases) {
    EXPECT_EQ(lease.ended_by, EndedBy::Expiry) << lease.name;
    for (const auto &leak : lease.leaks) EXPECT_EQ(leak.reclaimed, leak.address != 0x5000) << leak.address;
  }
}

// The test's classifier: what `g_reachable` names is reachable, everything else live is lost.
std::set<uint64_t> g_reachable;
void classify_by_address(Tracker &tracker, uint32_t, bool) {
  std::vector<std::pair<uint64_t, uint8_t>> classes;
  for (const Tracker::LiveMemory &live : tracker.live_memory())
    classes.emplace_back(live.id,
                         static_cast<uint8_t>(g_reachable.count(live.address) != 0 ? reachability::Class::Reachable
                                                                                   : reachability::Class::Direct));
  tracker.write_reachability(classes, 0);
}

// Allocations made from one call site (the stack is the innermost frame only).
void allocate_at_one_site(Tracker &tracker, uint64_t first, int count) {
  for (int i = 0; i < count; ++i) tracker.on_alloc(event(first + static_cast<uint64_t>(i) * 0x1000, 100));
}

class Checks : public ::testing::Test {
 protected:
  void SetUp() override { Tracker::call_to_classify_leases(&classify_by_address); }
  void TearDown() override {
    Tracker::call_to_classify_leases(nullptr);
    g_reachable.clear();
  }
};

TEST_F(Checks, AProcessThatRecordsAnswersChecksFromOutsideAndItsReportListsTheLastOnesLossesAndGrowth) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir, 1));
  g_reachable = {0x100000};
  tracker.on_alloc(event(0x100000, 5000));  // held: reachable at every check
  allocate_at_one_site(tracker, 0x200000, 2);

  cli::ControlPageOfProcess page;
  std::string error;
  ASSERT_TRUE(cli::find_control_page(getpid(), page, error)) << error;
  EXPECT_EQ(page.journal_path, tracker.journal_path());
  int32_t status = -99;
  ASSERT_TRUE(cli::ask_for_check(getpid(), page, 60'000, status, error)) << error;
  EXPECT_EQ(status, authority::kCheckDone);
  allocate_at_one_site(tracker, 0x300000, 3);  // the site grows by three
  ASSERT_TRUE(cli::ask_for_check(getpid(), page, 60'000, status, error)) << error;
  EXPECT_EQ(status, authority::kCheckDone);

  // The process runs (this one holds the journal's lock): the last check's losses are listed.
  const report::ProcessReport process = replay(tracker);
  EXPECT_TRUE(process.running);
  ASSERT_EQ(process.checks.size(), 2u);
  EXPECT_EQ(process.checks[0].lost_allocations, 2u);
  EXPECT_EQ(process.checks[1].lost_allocations, 5u);
  EXPECT_EQ(process.checks[1].reachable_bytes, 5000u);
  ASSERT_EQ(process.leases.size(), 1u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::Check);
  EXPECT_EQ(process.leases[0].leaks.size(), 5u);
  EXPECT_EQ(process.leases[0].reachable.size(), 1u);
  for (const report::Leak &leak : process.leases[0].leaks) EXPECT_EQ(leak.reachability, report::Reachability::Direct);
  ASSERT_EQ(process.site_growth.size(), 1u);
  const report::SiteGrowth &site = process.site_growth[0];
  EXPECT_EQ(site.lost_bytes, 500u);
  EXPECT_EQ(site.growth_bytes, 300);
  EXPECT_EQ(site.growth_allocations, 3);
  EXPECT_TRUE(site.growing());
  EXPECT_GT(site.rate_bytes_per_s, 0);

  // Ended, the process removes its page: nothing is left to ask; its report is of its exit.
  tracker.finish_process();
  struct stat status_of_page {};
  EXPECT_NE(stat(page.control_path.c_str(), &status_of_page), 0);
  EXPECT_FALSE(cli::ask_for_check(getpid(), page, 60'000, status, error));
  EXPECT_NE(error.find("ended before it answered"), std::string::npos) << error;
  const report::ProcessReport ended = replay(tracker);
  EXPECT_FALSE(ended.running);
  for (const report::LeaseEnding &lease : ended.leases) EXPECT_NE(lease.ended_by, EndedBy::Check);
}

TEST_F(Checks, AReclaimOutsideAnAuthorityLeaseIsNotTakenAndChecksGoOn) {
  testing::TempDir dir;
  Tracker tracker(options_for(dir));
  tracker.on_alloc(event(0x1000, 1000));
  const std::string control = authority::control_path_of_journal(tracker.journal_path());
  std::string error;
  ASSERT_TRUE(authority::ask_to_reclaim(control, getuid(), kReclaimAtExpiry, error)) << error;
  cli::ControlPageOfProcess page;
  ASSERT_TRUE(cli::find_control_page(getpid(), page, error)) << error;
  int32_t status = -99;
  ASSERT_TRUE(cli::ask_for_check(getpid(), page, 60'000, status, error)) << error;
  EXPECT_EQ(status, authority::kCheckDone);
  EXPECT_EQ(tracker.lease_state(kProcessLeaseId), LeaseState::Open);
  tracker.finish_process();
}

TEST_F(Checks, AProcessThatCannotClassifySaysSo) {
  testing::TempDir dir;
  Options options = options_for(dir);
  options.reachability = ReachabilityMode::Off;
  Tracker tracker(options);
  tracker.on_alloc(event(0x1000, 1000));
  cli::ControlPageOfProcess page;
  std::string error;
  ASSERT_TRUE(cli::find_control_page(getpid(), page, error)) << error;
  int32_t status = -99;
  ASSERT_TRUE(cli::ask_for_check(getpid(), page, 60'000, status, error)) << error;
  EXPECT_EQ(status, authority::kCheckNotClassified);
  tracker.finish_process();
}

TEST(ControlChannel, AProcessNotUnderLeaseguardOrGoneIsNamedAsSuch) {
  cli::ControlPageOfProcess page;
  std::string error;
  EXPECT_FALSE(cli::find_control_page(getppid(), page, error));  // ctest or a shell: no page
  EXPECT_NE(error.find("not running under leaseguard"), std::string::npos) << error;
  EXPECT_FALSE(cli::find_control_page(INT32_MAX, page, error));
  EXPECT_EQ(error, "no process " + std::to_string(INT32_MAX));
}

}  // namespace
}  // namespace leaseguard
