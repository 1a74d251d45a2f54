// The node lease authority's pieces that need no process: its protocol, the lines a lease's
// state is rebuilt from, the state directory, and the metrics text.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "authority_protocol.h"
#include "lease_state.h"
#include "lease_store.h"
#include "metrics_text.h"
#include "process_table.h"
#include "test_support.h"

namespace leaseguard::authority {
namespace {

TEST(AuthorityProtocol, EveryRequestComesBackAsItWasSent) {
  Request start;
  start.verb = Verb::Start;
  start.name = "12345";  // a scheduler's job id is a fine name
  start.ttl_ms = 2000;
  start.teardown = Teardown::Terminate;
  start.grace_ms = 1000;
  Request registration;
  registration.verb = Verb::Register;
  registration.lease = "7";
  registration.journal = "/tmp/run dir/journal 1.lgj";
  registration.start_time = 123456789;
  Request exited;
  exited.verb = Verb::Exited;
  exited.lease = "job.a";
  exited.status = 137;
  for (const Request &sent : {start, registration, exited}) {
    Request received;
    std::string error;
    ASSERT_TRUE(parse_request(format_request(sent), received, error)) << error;
    EXPECT_EQ(format_request(received), format_request(sent));
  }
}

TEST(AuthorityProtocol, RefusesWhatIsNotExactlyARequestOfThisVersion) {
  const std::string head = "leaseguard-authority/1 ";
  const char *refused[] = {
      "",
      "GET / HTTP/1.1\n",
      "leaseguard-authority/2 list\n",
      "leaseguard-authority/1 fly\n",
      "leaseguard-authority/1 list\nname=x\n",           // a field list does not take
      "leaseguard-authority/1 end\n",                    // lacks its lease
      "leaseguard-authority/1 end\nlease=a\nlease=b\n",  // twice
      "leaseguard-authority/1 end\nlease=a/b\n",         // not a name
      "leaseguard-authority/1 end\nlease=\n",            // empty
      "leaseguard-authority/1 start\nttl_ms=-1\n",       // not a number
      "leaseguard-authority/1 start\nttl_ms=99999999999999999999\n",
      "leaseguard-authority/1 start\ngrace_ms=3600001\n",  // over an hour
      "leaseguard-authority/1 start\nteardown=explode\n",
      "leaseguard-authority/1 start\nName=x\n",  // keys are lower-case
      "leaseguard-authority/1 start\nname\n",    // not key=value
      "leaseguard-authority/1 register\nlease=1\njournal=relative\nstart_time=1\n",
      "leaseguard-authority/1 end\nlease=a\tb\n",  // control character
  };
  for (const char *message : refused) {
    Request request;
    std::string error;
    EXPECT_FALSE(parse_request(message, request, error)) << message;
    EXPECT_FALSE(error.empty()) << message;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  }
  Request request;
  std::string error;
  EXPECT_FALSE(parse_request(head + "list\n" + std::string(kMaxMessageBytes, 'x'), request, error));
  EXPECT_NE(error.find("longer than"), std::string::npos) << error;
  EXPECT_FALSE(parse_request("leaseguard-authority/9 list\n", request, error));
  EXPECT_NE(error.find("this daemon speaks 1"), std::string::npos) << error;
}

TEST(AuthorityProtocol, AnswersKeepRepeatedFieldsInOrder) {
  Answer sent{true, {{"lease", "1 a"}, {"lease", "2 b"}, {"count", "2"}}};
  Answer received;
  std::string error;
  ASSERT_TRUE(parse_answer(format_answer(sent), received, error)) << error;
  EXPECT_TRUE(received.ok);
  EXPECT_EQ(received.fields, sent.fields);
  EXPECT_EQ(received.field("lease"), "1 a");
  ASSERT_TRUE(parse_answer(error_answer("no such\nlease"), received, error));
  EXPECT_FALSE(received.ok);
  EXPECT_EQ(received.field("message"), "no such lease");
}

TEST(LeaseStateLines, RebuildWhatTheDaemonActedOn) {
  LeaseState lease;
  ASSERT_TRUE(lease.apply(granted_line(4, "job-9", 1000, 1500, Teardown::Terminate)));
  ASSERT_TRUE(lease.apply(deadline_line(50'000)));
  ASSERT_TRUE(lease.apply(process_line(321, 99, "/out/a b.lgj")));
  ASSERT_TRUE(lease.apply(process_line(322, 100, "/out/c.lgj")));
  ASSERT_TRUE(lease.apply(process_line(321, 99, "/out/exec.lgj")));  // the same process again, after an exec
  ASSERT_TRUE(lease.apply(deadline_line(80'000)));                   // extended
  ASSERT_TRUE(lease.apply(ending_line(EndReason::Expiry, 80'001)));
  ASSERT_TRUE(lease.apply(stage_line(Stage::Reclaim, 80'002)));
  ASSERT_TRUE(lease.apply(freed_line(322, 4096)));
  ASSERT_TRUE(lease.apply(stage_line(Stage::Sigterm, 80'010)));
  EXPECT_FALSE(lease.apply(stage_line(Stage::Reclaim, 80'011))) << "stages only go forward";
  EXPECT_FALSE(lease.apply(ending_line(EndReason::End, 80'012))) << "a lease ends once";
  EXPECT_EQ(lease.id, 4u);
  EXPECT_EQ(lease.name, "job-9");
  EXPECT_EQ(lease.owner, 1000u);
  EXPECT_EQ(lease.grace_ms, 1500u);
  EXPECT_EQ(lease.teardown, Teardown::Terminate);
  EXPECT_EQ(lease.deadline_ms, 80'000u);
  ASSERT_EQ(lease.processes.size(), 2u);
  EXPECT_EQ(lease.processes[0].journal, "/out/exec.lgj");
  EXPECT_EQ(lease.processes[1].freed_bytes, 4096u);
  EXPECT_EQ(lease.ended_by, EndReason::Expiry);
  EXPECT_EQ(lease.stage, Stage::Sigterm);
  ASSERT_EQ(lease.stages.size(), 2u);
  EXPECT_EQ(lease.stages[1].began_ms, 80'010u);
  EXPECT_FALSE(lease.ended());
  ASSERT_TRUE(lease.apply(ended_line(81'000)));
  EXPECT_TRUE(lease.ended());
}

TEST(LeaseStateLines, RefuseLinesThatAreNotEvents) {
  LeaseState lease;
  EXPECT_FALSE(lease.apply(deadline_line(1))) << "nothing before a grant";
  ASSERT_TRUE(lease.apply(granted_line(1, "a", 0, 0, Teardown::Report)));
  for (const char *line : {"", "deadline=", "deadline=x", "process=1 2 relative", "process=0 2 /a", "ending=expiry",
                           "ending=none 5", "stage=reclaim 5", "ended=5", "granted=0 a 0 0 report",
                           "granted=2 a/b 0 0 report", "granted=2 a 0 0 report extra", "unknown=1"})
    EXPECT_FALSE(lease.apply(line)) << line;
  EXPECT_EQ(lease.id, 1u);
}

class StateDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/leaseguard-state-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    directory_ = root_ + "/state";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_, directory_;
};

TEST_F(StateDirectory, KeepsEveryLeaseAndWhereItsTeardownGot) {
  std::string error;
  {
    LeaseStore store;
    ASSERT_TRUE(store.open(directory_, error)) << error;
    EXPECT_EQ(std::filesystem::status(directory_).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
    ASSERT_TRUE(store.create(3, {granted_line(3, "a", 0, 10, Teardown::Terminate), deadline_line(100)}, error));
    ASSERT_TRUE(store.create(9, {granted_line(9, "b", 0, 10, Teardown::Report), deadline_line(0)}, error));
    ASSERT_TRUE(store.append(3, process_line(77, 5, "/j/77.lgj"), error)) << error;
    ASSERT_TRUE(store.append(3, ending_line(EndReason::End, 200), error));
    ASSERT_TRUE(store.append(3, stage_line(Stage::Sigterm, 201), error));
  }
  // A daemon killed while appending left half a line: not acted on, not applied.
  {
    std::ofstream torn(directory_ + "/lease-3", std::ios::app);
    torn << "stage=sigkill 2";
  }
  LeaseStore store;
  ASSERT_TRUE(store.open(directory_, error)) << error;
  std::vector<LeaseState> leases;
  uint64_t next_id = 0;
  std::vector<std::string> warnings;
  ASSERT_TRUE(store.load(leases, next_id, warnings, error)) << error;
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(next_id, 10u);
  const LeaseState &a = leases[0].id == 3 ? leases[0] : leases[1];
  EXPECT_EQ(a.stage, Stage::Sigterm);
  EXPECT_EQ(a.ended_by, EndReason::End);
  ASSERT_EQ(a.processes.size(), 1u);
  EXPECT_EQ(a.processes[0].pid, 77);
  ASSERT_TRUE(store.remove(9, error));
  ASSERT_TRUE(store.load(leases, next_id, warnings, error));
  EXPECT_EQ(leases.size(), 1u);
  EXPECT_EQ(next_id, 10u) << "an id is never given twice, also once its lease is gone";
}

TEST_F(StateDirectory, FollowsNoSymlinkAndSkipsWhatIsNotALease) {
  std::string error;
  LeaseStore store;
  ASSERT_TRUE(store.open(directory_, error)) << error;
  ASSERT_TRUE(store.create(1, {granted_line(1, "a", 0, 10, Teardown::Report)}, error));
  // A planted symlink to a file the daemon could be tricked into reading or appending to.
  const std::string target = root_ + "/target";
  { std::ofstream(target) << granted_line(2, "evil", 0, 10, Teardown::Report) << "\n"; }
  ASSERT_EQ(symlink(target.c_str(), (directory_ + "/lease-2").c_str()), 0);
  { std::ofstream(directory_ + "/lease-5") << "deadline=3\n"; }  // no grant
  { std::ofstream(directory_ + "/notes.txt") << "hello\n"; }
  std::vector<LeaseState> leases;
  uint64_t next_id = 0;
  std::vector<std::string> warnings;
  ASSERT_TRUE(store.load(leases, next_id, warnings, error)) << error;
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].name, "a");
  EXPECT_EQ(warnings.size(), 3u);
  EXPECT_FALSE(store.append(2, deadline_line(1), error)) << "appending through the symlink";
  std::ifstream unchanged(target);
  std::stringstream contents;
  contents << unchanged.rdbuf();
  EXPECT_EQ(contents.str().find("deadline"), std::string::npos);

  // The directory itself may not be writable by others: they could plant files in it.
  LeaseStore other;
  ASSERT_EQ(chmod(directory_.c_str(), 0777), 0);
  EXPECT_FALSE(other.open(directory_, error));
  EXPECT_NE(error.find("state directory"), std::string::npos) << error;
}

TEST_F(StateDirectory, RemembersTheBootItsLeasesBelongTo) {
  std::string error;
  LeaseStore store;
  ASSERT_TRUE(store.open(directory_, error)) << error;
  EXPECT_EQ(store.stored_boot_id(), "");
  const std::string boot = current_boot_id();
  EXPECT_FALSE(boot.empty());
  ASSERT_TRUE(store.record_boot_id(boot, error)) << error;
  EXPECT_EQ(store.stored_boot_id(), boot);
}

TEST(MetricsText, NamesEverySeriesOfTheContractWithEscapedLabels) {
  MetricsSnapshot snapshot;
  LeaseMetrics lease;
  lease.name = "job\"1\\";
  lease.id = 4;
  lease.ttl_remaining_seconds = 1.5;
  // Two processes whose device 0 is not the same GPU (CUDA_VISIBLE_DEVICES=1 for the second),
  // and one that did not say which GPU its device 1 is.
  const std::string first = "GPU-00000000-0000-0000-0000-000000000000";
  const std::string second = "GPU-00000000-0000-0000-0000-000000000001";
  lease.live = {{100, 0, 4096, first}, {101, 0, 8192, second}, {102, 1, 16, ""}};
  lease.lost_bytes_at_last_check = 40960;
  snapshot.leases.push_back(lease);
  LeaseMetrics untimed;
  untimed.name = "forever";
  untimed.id = 5;
  untimed.live = {{103, 1, 1, second}};
  snapshot.leases.push_back(untimed);
  snapshot.processes_registered = 4;
  snapshot.teardown_stages = {{"sigterm", 2}, {"sigkill", 1}};
  snapshot.lost_bytes_total = 5403;
  snapshot.reachable_at_end_bytes_total = 1048576;
  snapshot.reclaimed_bytes_total = 3145728;
  snapshot.recently_ended = {{"done", 3, 5403, 1048576}};
  snapshot.gpus = std::vector<NodeGpuMetrics>{{0, first, 0, 0}, {1, second, 2097152, 1}};
  snapshot.complete = false;
  snapshot.made_at_seconds = 1764979200.25;
  const std::string text = render_metrics(snapshot);
  for (const char *expected : {
           "# TYPE leaseguard_leases_active gauge\nleaseguard_leases_active 2\n",
           "leaseguard_lease_live_bytes{lease=\"job\\\"1\\\\\",id=\"4\",pid=\"100\",device=\"0\",uuid=\"GPU-00000000-"
           "0000-0000-"
           "0000-000000000000\"} 4096\n",
           "leaseguard_lease_live_bytes{lease=\"job\\\"1\\\\\",id=\"4\",pid=\"101\",device=\"0\",uuid=\"GPU-00000000-"
           "0000-0000-"
           "0000-000000000001\"} 8192\n",
           "leaseguard_lease_live_bytes{lease=\"job\\\"1\\\\\",id=\"4\",pid=\"102\",device=\"1\",uuid=\"\"} 16\n",
           // Per GPU, by UUID, with NVML's index: process 103's device 1 and 101's device 0 are one GPU.
           "leaseguard_node_live_bytes{device=\"0\",uuid=\"GPU-00000000-0000-0000-0000-000000000000\"} 4096\n",
           "leaseguard_node_live_bytes{device=\"1\",uuid=\"GPU-00000000-0000-0000-0000-000000000001\"} 8193\n",
           "leaseguard_node_live_bytes{device=\"1\",uuid=\"\"} 16\n",
           "leaseguard_unaccounted_bytes{device=\"1\",uuid=\"GPU-00000000-0000-0000-0000-000000000001\"} 2097152\n",
           "leaseguard_unaccounted_processes{device=\"1\",uuid=\"GPU-00000000-0000-0000-0000-000000000001\"} 1\n",
           "leaseguard_lease_ttl_remaining_seconds{lease=\"job\\\"1\\\\\",id=\"4\"} 1.500\n",
           "# TYPE leaseguard_lease_lost_bytes gauge\n",
           "leaseguard_lease_lost_bytes{lease=\"job\\\"1\\\\\",id=\"4\"} 40960\n",
           "# TYPE leaseguard_teardown_stage_total counter\n",
           "leaseguard_teardown_stage_total{stage=\"sigkill\"} 1\n",
           "# TYPE leaseguard_leaked_bytes_total counter\nleaseguard_leaked_bytes_total 5403\n",
           "# TYPE leaseguard_reachable_at_end_bytes_total counter\nleaseguard_reachable_at_end_bytes_total 1048576\n",
           "leaseguard_ended_lease_lost_bytes{lease=\"done\",id=\"3\"} 5403\n",
           "leaseguard_ended_lease_reachable_bytes{lease=\"done\",id=\"3\"} 1048576\n",
           "# TYPE leaseguard_reclaimed_bytes_total counter\nleaseguard_reclaimed_bytes_total 3145728\n",
           "# TYPE leaseguard_metrics_update_success gauge\nleaseguard_metrics_update_success 0\n",
           "leaseguard_metrics_last_update_timestamp_seconds 1764979200.250\n",
       })
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\nin:\n" << text;
  EXPECT_EQ(text.find("id=\"5\"} "), std::string::npos) << "a lease without a TTL or a check has no such series";
  EXPECT_EQ(escape_label_value("a\nb"), "a\\nb");
}

// Without NVML there are no GPUs to speak of: the unaccounted series are declared and empty.
TEST(MetricsText, WithoutNvmlNothingIsSaidOfUnaccountedMemory) {
  MetricsSnapshot snapshot;
  const std::string text = render_metrics(snapshot);
  EXPECT_NE(text.find("# TYPE leaseguard_unaccounted_bytes gauge\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("leaseguard_unaccounted_bytes{"), std::string::npos) << text;
  EXPECT_NE(text.find("leaseguard_metrics_update_success 1\n"), std::string::npos) << text;
}

TEST(MetricsText, TheTextfileIsReplacedWhole) {
  char pattern[] = "/tmp/leaseguard-textfile-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string path = std::string(pattern) + "/leaseguard.prom";
  std::string error;
  ASSERT_TRUE(write_textfile(path, "a 1\n", error)) << error;
  ASSERT_TRUE(write_textfile(path, "b 2\n", error)) << error;
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  EXPECT_EQ(contents.str(), "b 2\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(pattern), std::filesystem::directory_iterator()), 1)
      << "no temporary file is left";
  std::filesystem::remove_all(pattern);
}

}  // namespace
// A Unix socket listening at `path` (its descriptor).
int socket_at(const std::string &path) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address), 0) << path;
  return fd;
}

// `argv` started with `environment` only, running until killed.
pid_t started_with(std::vector<std::string> argv, std::vector<std::string> environment) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char *> args, env;
    for (std::string &argument : argv) args.push_back(argument.data());
    for (std::string &entry : environment) env.push_back(entry.data());
    args.push_back(nullptr);
    env.push_back(nullptr);
    execve(args[0], args.data(), env.data());
    _exit(127);
  }
  return pid;
}

// A lease's mark names the daemon's socket by the path the process has for it: the daemon's
// own, another way to the same socket (a link, a container's mount of the node's directory),
// never another socket.
TEST(LeaseMark, NamesTheDaemonsSocketByAnyPathToIt) {
  leaseguard::testing::TempDir dir;
  for (const char *sub : {"/node", "/other", "/pod"}) mkdir((dir.path() + sub).c_str(), 0700);
  const std::string socket = dir / "node/leaseguard.sock";
  const int daemons = socket_at(socket), others = socket_at(dir / "other/leaseguard.sock");
  ASSERT_EQ(symlink((dir / "node").c_str(), (dir / "linked").c_str()), 0);
  auto marked = [](const std::string &path) {
    return std::vector<std::string>{"LEASEGUARD_AUTHORITY_LEASE=9", "LEASEGUARD_SOCKET=" + path};
  };
  const std::vector<std::string> sleep = {"/bin/sleep", "1000"};
  std::vector<pid_t> expected = {started_with(sleep, marked(socket)),
                                 started_with(sleep, marked(dir / "linked/leaseguard.sock"))};
  const std::vector<pid_t> not_marked = {
      started_with(sleep, marked(dir / "other/leaseguard.sock")),                            // another daemon's
      started_with(sleep, {"LEASEGUARD_AUTHORITY_LEASE=8", "LEASEGUARD_SOCKET=" + socket}),  // another lease
      started_with(sleep, marked("relative/leaseguard.sock"))};
  // In a mount namespace of its own, the node's directory mounted where the daemon has none.
  if (geteuid() == 0 && system("/usr/bin/unshare --mount /bin/true 2>/dev/null") == 0)
    expected.push_back(started_with({"/usr/bin/unshare", "--mount", "/bin/sh", "-c",
                                     "mount --bind " + dir.path() + "/node " + dir.path() + "/pod && exec sleep 1000"},
                                    marked(dir / "pod/leaseguard.sock")));
  // Each has exec'd (its environment is its own) once /proc says it runs sleep.
  auto runs_sleep = [](pid_t pid) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    return static_cast<bool>(comm >> name) && name == "sleep";
  };
  for (int tries = 0; tries < 6000; ++tries) {
    bool all = true;
    for (pid_t pid : expected) all = all && runs_sleep(pid);
    for (pid_t pid : not_marked) all = all && runs_sleep(pid);
    if (all) break;
    usleep(10'000);
  }
  std::set<pid_t> found;
  for (const ProcessName &process : processes_with_lease_mark(9, socket, getuid())) found.insert(process.pid);
  for (pid_t pid : expected) EXPECT_EQ(found.count(pid), 1u) << pid;
  for (pid_t pid : not_marked) EXPECT_EQ(found.count(pid), 0u) << pid;
  for (pid_t pid : expected) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  for (pid_t pid : not_marked) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  close(daemons);
  close(others);
}

}  // namespace leaseguard::authority
