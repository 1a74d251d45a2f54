// The lease authority's logic on real processes: this test is the lease's holder (as
// `lease start` is), its children are the job, and time is chosen by the test, so nothing
// waits on a wall-clock margin: only on processes ending.
#include "lease_authority.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace leaseguard::authority {
namespace {

class LeaseAuthorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/leaseguard-authority-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
    std::string error;
    ASSERT_TRUE(store_.open(directory_ + "/state", error)) << error;
    // Orphans of the job come back to the holder, as to `lease start`.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    me_ = Peer{getpid(), getuid(), getgid()};
  }
  void TearDown() override {
    for (pid_t child : children_)
      if (kill(child, SIGKILL) == 0) waitpid(child, nullptr, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    std::filesystem::remove_all(directory_);
  }

  uint64_t start_lease(LeaseAuthority &authority, uint64_t ttl_ms, Teardown teardown, uint64_t grace_ms,
                       uint64_t now_ms, const std::string &name = "job") {
    Request request;
    request.verb = Verb::Start;
    request.name = name;
    request.ttl_ms = ttl_ms;
    request.teardown = teardown;
    request.grace_ms = grace_ms;
    Answer answer;
    std::string error;
    EXPECT_TRUE(parse_answer(authority.handle(request, me_, now_ms), answer, error)) << error;
    EXPECT_TRUE(answer.ok) << format_answer(answer);
    return std::stoull(std::string(answer.field("id").value_or("0")));
  }

  // A child that has set its SIGTERM disposition (ignored or not) before this returns.
  pid_t job_process(bool ignore_sigterm) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    const pid_t child = fork();
    if (child == 0) {
      if (ignore_sigterm) signal(SIGTERM, SIG_IGN);
      else signal(SIGTERM, SIG_DFL);
      close(ready[0]);
      (void)!write(ready[1], "x", 1);
      while (true) pause();
    }
    close(ready[1]);
    char byte;
    EXPECT_EQ(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    children_.push_back(child);
    return child;
  }

  // A process that double-forks: its child exits at once, the grandchild (a daemon that
  // escaped its parent) runs on, reparented to this test. Returns the grandchild's pid.
  pid_t double_forked_process() {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    const pid_t child = fork();
    if (child == 0) {
      if (fork() == 0) {
        setsid();
        signal(SIGTERM, SIG_DFL);
        const pid_t self = getpid();
        (void)!write(ready[1], &self, sizeof self);
        while (true) pause();
      }
      _exit(0);
    }
    close(ready[1]);
    pid_t grandchild = 0;
    EXPECT_EQ(read(ready[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
    close(ready[0]);
    waitpid(child, nullptr, 0);
    children_.push_back(grandchild);
    return grandchild;
  }

  // Collects a process of the job once it ended (the test is its parent or subreaper).
  static int reap(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  std::string directory_;
  LeaseStore store_;
  Peer me_;
  std::vector<pid_t> children_;
};

TEST_F(LeaseAuthorityTest, TerminateEndsEveryProcessOfTheJobAndRecordsEachStage) {
  LeaseAuthority authority(store_);
  const uint64_t t0 = 1'000'000;
  const uint64_t id = start_lease(authority, 2000, Teardown::Terminate, 1000, t0);
  const pid_t stubborn = job_process(true);
  const pid_t obedient = job_process(false);
  const pid_t escaped = double_forked_process();

  EXPECT_EQ(authority.tick(t0 + 1999), t0 + 2000) << "nothing to do before the deadline";
  authority.tick(t0 + 2000);  // the lease expires: SIGTERM to each process
  EXPECT_TRUE(WIFSIGNALED(reap(obedient)));
  EXPECT_TRUE(WIFSIGNALED(reap(escaped)));
  authority.tick(t0 + 2500);  // within the grace period: the stubborn one runs on
  EXPECT_FALSE(authority.finished(id));
  EXPECT_EQ(authority.leases().at(id).stage, Stage::Sigterm);
  authority.tick(t0 + 3000);  // the grace period is over: SIGKILL
  const int status = reap(stubborn);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(authority.tick(t0 + 3050), 0u);
  ASSERT_TRUE(authority.finished(id));

  const LeaseState &lease = authority.leases().at(id);
  EXPECT_EQ(lease.ended_by, EndReason::Expiry);
  std::vector<Stage> stages;
  for (const StageTime &stage : lease.stages) stages.push_back(stage.stage);
  EXPECT_EQ(stages, (std::vector<Stage>{Stage::Reclaim, Stage::Sigterm, Stage::Sigkill, Stage::Verify}));
  EXPECT_EQ(lease.stages[2].began_ms, t0 + 3000);
  std::vector<pid_t> members;
  for (const LeaseProcess &process : lease.processes) members.push_back(process.pid);
  for (pid_t pid : {stubborn, obedient, escaped})
    EXPECT_NE(std::find(members.begin(), members.end(), pid), members.end()) << pid << " was not found";
  EXPECT_EQ(std::find(members.begin(), members.end(), getpid()), members.end()) << "the holder is never signalled";
}

TEST_F(LeaseAuthorityTest, ARestartedDaemonFinishesTheTeardownItWasIn) {
  const uint64_t t0 = 5'000'000;
  uint64_t id = 0;
  const pid_t stubborn = job_process(true);
  {
    LeaseAuthority before(store_);
    id = start_lease(before, 100, Teardown::Terminate, 1000, t0);
    before.tick(t0 + 100);
    ASSERT_EQ(before.leases().at(id).stage, Stage::Sigterm);
  }  // the daemon is gone; its state directory stays

  LeaseAuthority after(store_);
  std::vector<std::string> warnings;
  std::string error;
  ASSERT_TRUE(after.recover(t0 + 1200, warnings, error)) << error;
  ASSERT_EQ(after.leases().at(id).stage, Stage::Sigterm);
  after.tick(t0 + 1200);  // the grace period (from the stage's start, kept) is over
  EXPECT_EQ(WTERMSIG(reap(stubborn)), SIGKILL);
  after.tick(t0 + 1250);
  EXPECT_TRUE(after.finished(id));
  // What the summary gives `lease start`.
  bool listed = false;
  for (const auto &[key, value] : after.summary(id))
    listed = listed || (key == "process" && value.rfind(std::to_string(stubborn) + " ", 0) == 0);
  EXPECT_TRUE(listed);
}

TEST_F(LeaseAuthorityTest, OnlyTheOwnerOrRootManagesALease) {
  LeaseAuthority authority(store_);
  const uint64_t t0 = 1000;
  const uint64_t id = start_lease(authority, 0, Teardown::Report, 0, t0);
  Peer stranger = me_;
  stranger.uid = me_.uid + 4242;
  Request end;
  end.verb = Verb::End;
  end.lease = std::to_string(id);
  Answer answer;
  std::string error;
  ASSERT_TRUE(parse_answer(authority.handle(end, stranger, t0), answer, error));
  EXPECT_FALSE(answer.ok);
  Request list;
  list.verb = Verb::List;
  ASSERT_TRUE(parse_answer(authority.handle(list, stranger, t0), answer, error));
  EXPECT_FALSE(answer.field("lease")) << "another user's leases are not listed";
  Request join;
  join.verb = Verb::Register;
  join.lease = std::to_string(id);
  join.journal = "/tmp/x.lgj";
  join.start_time = live_process(getpid())->start_time;
  ASSERT_TRUE(parse_answer(authority.handle(join, stranger, t0), answer, error));
  EXPECT_FALSE(answer.ok) << "a process cannot join another user's lease";
  join.start_time += 1;
  ASSERT_TRUE(parse_answer(authority.handle(join, me_, t0), answer, error));
  EXPECT_FALSE(answer.ok) << "a registration names the process that sends it";

  ASSERT_TRUE(parse_answer(authority.handle(end, me_, t0), answer, error));
  EXPECT_TRUE(answer.ok) << format_answer(answer);
  authority.tick(t0);
  EXPECT_TRUE(authority.finished(id));
  EXPECT_EQ(authority.leases().at(id).ended_by, EndReason::End);
}

TEST_F(LeaseAuthorityTest, ExtendMovesTheDeadline) {
  LeaseAuthority authority(store_);
  const uint64_t t0 = 1000;
  const uint64_t id = start_lease(authority, 500, Teardown::Report, 0, t0);
  Request extend;
  extend.verb = Verb::Extend;
  extend.lease = "job";
  extend.ttl_ms = 1000;
  Answer answer;
  std::string error;
  ASSERT_TRUE(parse_answer(authority.handle(extend, me_, t0 + 100), answer, error));
  ASSERT_TRUE(answer.ok) << format_answer(answer);
  EXPECT_EQ(answer.field("ttl_remaining_ms"), "1400");
  authority.tick(t0 + 600);
  EXPECT_FALSE(authority.finished(id));
  authority.tick(t0 + 1500);
  EXPECT_TRUE(authority.finished(id));
}

TEST_F(LeaseAuthorityTest, AnIdIsNeverGrantedTwiceAlsoAfterEveryLeaseWasForgottenAndTheDaemonRestarted) {
  uint64_t first = 0;
  {
    LeaseAuthority before(store_);
    first = start_lease(before, 0, Teardown::Report, 0, 1000);
    Request end;
    end.verb = Verb::End;
    end.lease = "job";
    before.handle(end, me_, 1000);
    before.tick(1000);
    ASSERT_TRUE(before.finished(first));
    before.forget(first);  // reported: its file goes, nothing of it is kept
  }
  LeaseAuthority after(store_);
  std::vector<std::string> warnings;
  std::string error;
  ASSERT_TRUE(after.recover(2000, warnings, error)) << error;
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_TRUE(after.leases().empty());
  EXPECT_GT(start_lease(after, 0, Teardown::Report, 0, 2000), first);
}

TEST_F(LeaseAuthorityTest, ALeaseMayBeNamedByANumberThatIsAnotherLeasesId) {
  LeaseAuthority authority(store_);
  const uint64_t first = start_lease(authority, 0, Teardown::Report, 0, 1000, "job");
  // A Slurm job id as the name: lease 1 lives, and "1" is a name no live lease has.
  const uint64_t second = start_lease(authority, 0, Teardown::Report, 0, 1000, std::to_string(first));
  EXPECT_NE(second, first);
  // Its name, not the other's id, is what "1" finds from then on.
  Request end;
  end.verb = Verb::End;
  end.lease = std::to_string(first);
  Answer answer;
  std::string error;
  ASSERT_TRUE(parse_answer(authority.handle(end, me_, 1000), answer, error));
  EXPECT_EQ(answer.field("id"), std::to_string(second));
  // And a live name is not granted twice.
  Request again;
  again.verb = Verb::Start;
  again.name = "job";
  ASSERT_TRUE(parse_answer(authority.handle(again, me_, 1000), answer, error));
  EXPECT_FALSE(answer.ok);
  EXPECT_EQ(answer.field("message"), "a lease named 'job' is live already");
}

// Names are each user's: another local user cannot take the name a job will ask for (Slurm's
// job id), and a name finds the asker's own lease. Root names another user's lease by name
// only where one user has it live; else by id.
TEST_F(LeaseAuthorityTest, NamesAreEachUsersOwn) {
  LeaseAuthority authority(store_);
  const Peer user{getpid(), 1000, 1000}, other{getpid(), 4242, 4242}, root{getpid(), 0, 0};
  auto ask = [&](const Peer &peer, Verb verb, const std::string &name) {
    Request request;
    request.verb = verb;
    (verb == Verb::Start ? request.name : request.lease) = name;
    Answer answer;
    std::string error;
    EXPECT_TRUE(parse_answer(authority.handle(request, peer, 1000), answer, error)) << error;
    return answer;
  };
  const Answer squatted = ask(other, Verb::Start, "4242");
  ASSERT_TRUE(squatted.ok) << format_answer(squatted);
  const Answer own = ask(user, Verb::Start, "4242");
  ASSERT_TRUE(own.ok) << format_answer(own);        // the other user's does not stand in the way
  EXPECT_FALSE(ask(user, Verb::Start, "4242").ok);  // the user's own does
  const Answer ended = ask(user, Verb::End, "4242");
  ASSERT_TRUE(ended.ok) << format_answer(ended);
  EXPECT_EQ(ended.field("id"), own.field("id"));
  // Root names another user's lease where only one user has the name live; two, it must say
  // which by id.
  const Answer only = ask(other, Verb::Start, "7");
  ASSERT_TRUE(only.ok) << format_answer(only);
  const Answer by_root = ask(root, Verb::End, "7");
  ASSERT_TRUE(by_root.ok) << format_answer(by_root);
  EXPECT_EQ(by_root.field("id"), only.field("id"));
}

// A scheduler's prolog (root) begins a job's lease for the job's user, held by no process:
// the user's processes join it and the user may end it; another user may not begin a lease
// for someone else. The lease survives its asker (the prolog exits at once).
TEST_F(LeaseAuthorityTest, RootBeginsALeaseForAUserThatNoProcessHolds) {
  LeaseAuthority authority(store_);
  const Peer user{getpid(), 1000, 1000}, other{getpid(), 4242, 4242}, root{getpid(), 0, 0};
  auto ask = [&](const Peer &peer, Request request) {
    Answer answer;
    std::string error;
    EXPECT_TRUE(parse_answer(authority.handle(request, peer, 1000), answer, error)) << error;
    return answer;
  };
  Request begin;
  begin.verb = Verb::Start;
  begin.name = "812";
  begin.owner = 1000;
  EXPECT_FALSE(ask(other, begin).ok);  // only root begins one for another user
  const Answer granted = ask(root, begin);
  ASSERT_TRUE(granted.ok) << format_answer(granted);
  const LeaseState &lease = authority.leases().at(1);
  EXPECT_EQ(lease.owner, 1000u);
  EXPECT_EQ(lease.holder_pid, 0);
  EXPECT_GT(lease.holder_start_time, 0u);  // processes with its mark count from now
  // The user's own lease of that name now: the user cannot begin a second.
  begin.owner.reset();
  EXPECT_FALSE(ask(user, begin).ok);
  Request join;
  join.verb = Verb::Register;
  join.lease = "1";
  join.journal = "/tmp/leaseguard-unit.journal";
  join.start_time = live_process(getpid())->start_time;
  EXPECT_TRUE(ask(user, join).ok);
  EXPECT_FALSE(ask(other, join).ok);
  Request end;
  end.verb = Verb::End;
  end.lease = "812";
  EXPECT_TRUE(ask(user, end).ok);
  // The request's own round trip: `owner` travels, and a value that is no user is refused.
  Request parsed;
  std::string error;
  begin.owner = 65534;
  ASSERT_TRUE(parse_request(format_request(begin), parsed, error)) << error;
  EXPECT_EQ(parsed.owner, std::optional<uid_t>(65534));
  EXPECT_FALSE(parse_request("leaseguard-authority/1 start\nowner=4294967295\n", parsed, error));
}

}  // namespace
}  // namespace leaseguard::authority
