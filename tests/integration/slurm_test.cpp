// leaseguard's Slurm integration against a real Slurm: Debian's slurmctld and slurmd, with
// munge, on this machine, started and stopped by the test, with `leaseguard slurm prolog`,
// `task-prolog` and `epilog` as the node's Prolog, TaskProlog and Epilog and a node daemon
// (docs/lease-authority.md, "Slurm"). Each job runs as user nobody on the simulated GPU; what
// the epilog said is read from the job's report and from Slurm's node state.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "authority_daemon.h"
#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

constexpr const char *kProgramsNeeded[] = {"/usr/sbin/slurmctld", "/usr/sbin/slurmd",  "/usr/sbin/munged",
                                           "/usr/bin/sbatch",     "/usr/bin/scontrol", "/usr/sbin/runuser"};
// How long any one thing Slurm does may take before the test gives up on it (a job's end,
// its epilog): far past what each takes, only so that a broken Slurm fails the test.
constexpr int kPatienceTenths = 1800;

void write_file(const std::string &path, const std::string &text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

void pause_a_tenth() { usleep(100'000); }

// A real single-node cluster in `dir`: munged, slurmctld and slurmd, the node's daemon, and
// the three scripts, each a line calling leaseguard as slurm.conf needs a program to run.
class SlurmNode {
 public:
  SlurmNode(const TempDir &dir, uid_t user) : dir_(dir.path()), user_(user) {}
  ~SlurmNode() { stop(); }

  void start() {
    for (const char *sub : {"/munge", "/run", "/slurm-state", "/spool", "/log", "/jobs-parent"})
      mkdir((dir_ + sub).c_str(), 0755);
    chmod((dir_ + "/munge").c_str(), 0700);
    // The jobs' files (their scripts, what they say) and the simulated GPUs' usage are the
    // job user's; the directory tree above them lets it through.
    chmod(dir_.c_str(), 0755);
    for (const char *sub : {"/share", "/usage"}) {
      mkdir((dir_ + sub).c_str(), 0755);
      ASSERT_EQ(chown((dir_ + sub).c_str(), user_, static_cast<gid_t>(-1)), 0);
    }
    write_file(dir_ + "/munge/munge.key", std::string(1024, 'k') + std::to_string(getpid()), 0400);
    ASSERT_EQ(run_process({"/usr/sbin/munged", "--key-file=" + dir_ + "/munge/munge.key",
                           "--socket=" + dir_ + "/run/munge.socket", "--pid-file=" + dir_ + "/run/munged.pid",
                           "--log-file=" + dir_ + "/log/munged.log", "--seed-file=" + dir_ + "/munge/seed"})
                  .exit_code,
              0);
    daemon_.emplace(dir_, true, std::vector<std::string>{"--all-users"},
                    std::map<std::string, std::string>{{"LEASEGUARD_SIM_DEVICES", "2"}});
    if (::testing::Test::HasFatalFailure()) return;
    // What the prolog and epilog say goes to a log of theirs; the task prolog's (it runs as the
    // job's user) to the job's output.
    const std::string call =
        std::string("%s") + LEASEGUARD_BIN + " slurm %s --socket " + socket() + " --out " + jobs() + " --grace 1s%s\n";
    auto script = [&](const char *stage, const char *extra) {
      char line[2048];
      // The task prolog as docs/lease-authority.md gives it: leaseguard not under the preload
      // a step inherits from its batch script, which is passed on.
      const char *before =
          std::string(stage) == "task-prolog" ? "env -u LD_PRELOAD LEASEGUARD_TASK_LD_PRELOAD=\"$LD_PRELOAD\" " : "";
      std::snprintf(line, sizeof line, call.c_str(), before, stage, extra);
      write_file(dir_ + "/" + stage + ".sh", std::string("#!/bin/sh\nexec ") + line, 0755);
    };
    const std::string logged = " 2>>" + dir_ + "/log/leaseguard.log";
    script("prolog", logged.c_str());
    script("task-prolog", " --sim");
    script("epilog", logged.c_str());
    const int controller_port = free_port(), node_port = free_port();
    write_file(conf(),
               "ClusterName=leaseguard\nSlurmctldHost=localhost\nSlurmctldPort=" + std::to_string(controller_port) +
                   "\nSlurmdPort=" + std::to_string(node_port) + "\nAuthType=auth/munge\nAuthInfo=socket=" + dir_ +
                   "/run/munge.socket\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\nStateSaveLocation=" +
                   dir_ + "/slurm-state\nSlurmdSpoolDir=" + dir_ + "/spool\nSlurmctldPidFile=" + dir_ +
                   "/run/slurmctld.pid\nSlurmdPidFile=" + dir_ + "/run/slurmd.pid\nSlurmctldLogFile=" + dir_ +
                   "/log/slurmctld.log\nSlurmdLogFile=" + dir_ +
                   "/log/slurmd.log\n"
                   // Process tracking by parentage: a job's orphan in a session of its own
                   // escapes Slurm, as it does on many sites; the lease is what finds it.
                   "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/builtin\n"
                   "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nReturnToService=2\nMpiDefault=none\n"
                   "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
                   "PrologFlags=Alloc\nProlog=" +
                   dir_ + "/prolog.sh\nTaskProlog=" + dir_ + "/task-prolog.sh\nEpilog=" + dir_ +
                   "/epilog.sh\nNodeName=localhost CPUs=2 RealMemory=1000 State=UNKNOWN\n"
                   "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
               0644);
    ASSERT_EQ(run_process({"/usr/sbin/slurmctld", "-f", conf()}, environment()).exit_code, 0);
    ASSERT_EQ(run_process({"/usr/sbin/slurmd", "-f", conf()}, environment()).exit_code, 0);
    ASSERT_TRUE(wait_for_node("idle")) << node_state() << log("slurmctld.log") << log("slurmd.log");
  }

  void stop() {
    for (const char *pid_file : {"/run/slurmd.pid", "/run/slurmctld.pid", "/run/munged.pid"}) {
      std::ifstream file(dir_ + pid_file);
      pid_t pid = 0;
      if (!(file >> pid) || pid <= 0) continue;
      kill(pid, SIGTERM);
      for (int tenths = 0; tenths < kPatienceTenths && kill(pid, 0) == 0; ++tenths) pause_a_tenth();
      unlink((dir_ + pid_file).c_str());
    }
    daemon_.reset();
  }

  // Submits `script` (a job of `user_`'s) with sbatch; its id.
  std::string submit(const std::string &name, const std::string &body) {
    const std::string script = dir_ + "/share/" + name + ".sh";
    write_file(script, "#!/bin/sh\n" + body, 0755);
    std::map<std::string, std::string> submitting = environment();
    submitting["LEASEGUARD_SIM_USAGE_DIR"] = dir_ + "/usage";  // the job's simulated GPUs publish there
    submitting["LEASEGUARD_SIM_DEVICES"] = "2";                // the node's
    const passwd *entry = getpwuid(user_);
    const RunResult submitted =
        run_process({"/usr/sbin/runuser", "-u", entry != nullptr ? entry->pw_name : "nobody", "--", "/usr/bin/sbatch",
                     "--parsable", "-D", dir_ + "/share", "-o", dir_ + "/share/" + name + ".out", script},
                    submitting);
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    std::string id = submitted.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.substr(0, id.find(';'));
  }

  // Waits until job `id` and its epilog are over: its state is no longer pending, running or
  // completing (Slurm counts the epilog in the last).
  bool wait_for_job(const std::string &id) {
    for (int tenths = 0; tenths < kPatienceTenths; ++tenths) {
      const std::string said = run_process({"/usr/bin/scontrol", "-o", "show", "job", id}, environment()).out;
      const size_t state = said.find("JobState=");
      if (state != std::string::npos) {
        const std::string name = said.substr(state + 9, said.find(' ', state) - state - 9);
        if (name != "PENDING" && name != "RUNNING" && name != "COMPLETING" && name != "CONFIGURING" &&
            said.find("COMPLETING") == std::string::npos)
          return true;
      }
      pause_a_tenth();
    }
    return false;
  }

  std::string node_state() { return run_process({"/usr/bin/sinfo", "-h", "-N", "-o", "%T"}, environment()).out; }
  bool wait_for_node(const std::string &state) {
    for (int tenths = 0; tenths < kPatienceTenths; ++tenths) {
      if (node_state().find(state) != std::string::npos) return true;
      pause_a_tenth();
    }
    return false;
  }

  std::map<std::string, std::string> environment() const { return {{"SLURM_CONF", conf()}}; }
  std::string conf() const { return dir_ + "/slurm.conf"; }
  std::string jobs() const { return dir_ + "/jobs-parent/jobs"; }
  std::string socket() const { return dir_ + "/leaseguard.sock"; }
  std::string share() const { return dir_ + "/share"; }
  std::string log(const std::string &name) const { return "\n--- " + name + ":\n" + read_text(dir_ + "/log/" + name); }
  // What job `name` printed, what leaseguard's scripts said, and the job's text report.
  std::string said(const std::string &name, const std::string &id) const {
    return "\n--- job " + name + ":\n" + read_text(dir_ + "/share/" + name + ".out") + log("leaseguard.log") +
           "\n--- report:\n" + read_text(jobs() + "/" + id + "/leaseguard-report.txt");
  }

 private:
  std::string dir_;
  uid_t user_;
  // The node's daemon, open to every user's jobs, with the simulator's NVML and two GPUs.
  std::optional<Daemon> daemon_;
};

// The job's report, as the epilog wrote it.
JsonValue job_report(const SlurmNode &node, const std::string &id) {
  JsonValue report;
  std::string error;
  EXPECT_TRUE(JsonValue::parse(read_text(node.jobs() + "/" + id + "/leaseguard-report.json"), report, error))
      << error << read_text(node.share() + "/../log/leaseguard.log");
  return report;
}

bool process_runs(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The skip's reason, where this machine cannot run a Slurm of the test's own.
std::string why_not_here() {
  if (geteuid() != 0) return "slurmd and the Prolog/Epilog run as root";
  for (const char *program : kProgramsNeeded)
    if (access(program, X_OK) != 0) return std::string(program) + " is not installed (Debian's slurm-wlm, munge)";
  const passwd *nobody = getpwnam("nobody");
  if (nobody == nullptr) return "no user nobody to run the jobs as";
  if (run_process({"/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/test", "-x", victim("slurm_job")}).exit_code !=
      0)
    return "user nobody cannot run the build's programs (a directory above the build is closed to others)";
  return "";
}

// Freezes `pid` in a cgroup (v1 freezer) of its own: it cannot be killed until thawed, as a
// process stuck in a driver call cannot. Returns the cgroup, or "" where there is no freezer.
std::string freeze(pid_t pid) {
  const std::string cgroup = "/sys/fs/cgroup/freezer/leaseguard-test-" + std::to_string(getpid());
  if (mkdir(cgroup.c_str(), 0755) != 0) return "";
  write_file(cgroup + "/cgroup.procs", std::to_string(pid), 0644);
  write_file(cgroup + "/freezer.state", "FROZEN", 0644);
  for (int tenths = 0; tenths < kPatienceTenths; ++tenths) {
    if (read_text(cgroup + "/freezer.state").find("FROZEN") == 0) return cgroup;
    pause_a_tenth();
  }
  return cgroup;
}

void thaw(const std::string &cgroup, pid_t pid) {
  write_file(cgroup + "/freezer.state", "THAWED", 0644);
  for (int tenths = 0; tenths < kPatienceTenths && process_runs(pid); ++tenths) pause_a_tenth();
  rmdir(cgroup.c_str());
}

pid_t pid_in(const std::string &path) {
  for (int tenths = 0; tenths < kPatienceTenths; ++tenths) {
    const std::string text = read_text(path);
    if (!text.empty() && text.back() == '\n') return static_cast<pid_t>(std::atoi(text.c_str()));
    pause_a_tenth();
  }
  return 0;
}

// The four jobs an operator worries about, one after another on one node: a clean one, a
// leaking one of two steps, one that leaves a setsid orphan holding device memory (torn down,
// reported, the node stays up), and one whose orphan cannot be killed (the node is drained).
TEST(Slurm, EachJobIsTornDownAndReportedAndANodeWithMemoryLeftIsDrained) {
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  TempDir dir;
  SlurmNode node(dir, getpwnam("nobody")->pw_uid);
  node.start();
  if (HasFatalFailure()) return;
  const std::string program = victim("slurm_job");

  // 1. Clean: nothing leaked, the lease named by the job's id, the device clean after it.
  const std::string clean = node.submit("clean", program + " clean\n");
  ASSERT_TRUE(node.wait_for_job(clean)) << node.log("slurmctld.log");
  JsonValue report = job_report(node, clean);
  EXPECT_EQ(report["summary"]["processes"].as_number(), 1) << node.said("clean", clean);
  EXPECT_EQ(report["summary"]["leaked_allocations"].as_number(), 0);
  EXPECT_EQ(report["lease_authority"]["name"].as_string(), clean);
  EXPECT_EQ(report["lease_authority"]["ended_by"].as_string(), "end");
  EXPECT_EQ(report["lease_authority"]["verify"]["result"].as_string(), "clean");
  EXPECT_EQ(node.node_state().find("drain"), std::string::npos) << node.node_state();

  // 2. Leaking, in two steps (the batch script's own and an srun step): both under the
  // job's lease, each losing 5403 bytes and holding 1 MiB on purpose. The job sees only the
  // node's second GPU, as its device 0: the report names it by its UUID.
  const std::string leak =
      node.submit("leak", "export CUDA_VISIBLE_DEVICES=1\nsrun " + program + " leak\n" + program + " leak\n");
  ASSERT_TRUE(node.wait_for_job(leak));
  report = job_report(node, leak);
  EXPECT_EQ(report["summary"]["leaked_bytes"].as_number(), 2 * 5403) << node.said("leak", leak);
  EXPECT_EQ(report["summary"]["reachable_bytes"].as_number(), 2 << 20);
  EXPECT_EQ(report["lease_authority"]["name"].as_string(), leak);
  ASSERT_EQ(report["processes"].size(), 2u);
  for (const JsonValue &process : report["processes"].items()) {
    ASSERT_EQ(process["devices"].size(), 1u) << node.said("leak", leak);
    EXPECT_EQ(process["devices"][0]["device"].as_number(), 0);
    EXPECT_EQ(process["devices"][0]["uuid"].as_string(), "GPU-6c672d73-696d-2d67-7075-000000000001");
  }
  EXPECT_NE(read_text(node.jobs() + "/" + leak + "/leaseguard-report.txt").find("SUMMARY: leaseguard: 10806 byte(s)"),
            std::string::npos)
      << read_text(node.jobs() + "/" + leak + "/leaseguard-report.txt");
  EXPECT_EQ(node.node_state().find("drain"), std::string::npos) << node.node_state();

  // 3. An orphan in a session of its own, which Slurm's process tracking loses: the lease's
  // teardown ends it, its memory comes back, the report names it, the node stays up.
  const std::string orphaned = node.submit("orphan", program + " orphan " + node.share() + "/orphan.pid\n");
  ASSERT_TRUE(node.wait_for_job(orphaned));
  const pid_t orphan = pid_in(node.share() + "/orphan.pid");
  ASSERT_GT(orphan, 0);
  EXPECT_FALSE(process_runs(orphan));
  report = job_report(node, orphaned);
  bool named = false;
  for (const JsonValue &process : report["lease_authority"]["processes"].items())
    named = named || process["pid"].as_number() == orphan;
  EXPECT_TRUE(named) << read_text(node.jobs() + "/" + orphaned + "/leaseguard-report.txt");
  EXPECT_EQ(report["lease_authority"]["verify"]["result"].as_string(), "clean");
  EXPECT_EQ(report["lease_authority"]["survived"].size(), 0u);
  EXPECT_EQ(node.node_state().find("drain"), std::string::npos) << node.node_state();

  // 4. An orphan that cannot be killed (frozen, as one stuck in the driver is): the teardown
  // reports it, the device still holds its 3 MiB, and the epilog's failure drains the node.
  const std::string stuck = node.submit("stuck", program + " orphan " + node.share() + "/stuck.pid\nwhile [ ! -e " +
                                                     node.share() + "/release ]; do sleep 0.1; done\n");
  const pid_t unkillable = pid_in(node.share() + "/stuck.pid");
  ASSERT_GT(unkillable, 0);
  const std::string cgroup = freeze(unkillable);
  write_file(node.share() + "/release", "", 0644);
  if (cgroup.empty()) {
    node.wait_for_job(stuck);
    GTEST_SKIP() << "no cgroup v1 freezer here to make a process that SIGKILL cannot end";
  }
  ASSERT_TRUE(node.wait_for_job(stuck));
  EXPECT_TRUE(node.wait_for_node("drain")) << node.node_state();
  report = job_report(node, stuck);
  ASSERT_EQ(report["lease_authority"]["survived"].size(), 1u)
      << read_text(node.jobs() + "/" + stuck + "/leaseguard-report.txt");
  EXPECT_EQ(report["lease_authority"]["survived"][0].as_number(), unkillable);
  EXPECT_EQ(report["lease_authority"]["verify"]["result"].as_string(), "held");
  EXPECT_NE(read_text(node.jobs() + "/" + stuck + "/leaseguard-report.txt")
                .find("still running after SIGKILL (stuck in the kernel): " + std::to_string(unkillable)),
            std::string::npos);
  thaw(cgroup, unkillable);
  EXPECT_FALSE(process_runs(unkillable));
}

// Where Slurm tells the prolog when the job ends (SLURM_JOB_END_TIME, seconds since the epoch,
// in the environment of newer releases), the job's lease ends then too, should no epilog come
// (slurmd gone): its time-to-live runs to it. No Slurm needed: the prolog is run as slurmd
// would run it, against a daemon of the test's.
TEST(Slurm, ThePrologsLeaseEndsWhenSlurmSaysTheJobEnds) {
  if (geteuid() != 0) GTEST_SKIP() << "the prolog runs as root";
  TempDir dir;
  chmod(dir.path().c_str(), 0755);
  Daemon daemon(dir.path(), false);
  const std::string socket = daemon.socket();
  const std::string ends = std::to_string(time(nullptr) + 3600);
  const RunResult prolog =
      run_process({LEASEGUARD_BIN, "slurm", "prolog", "--socket", socket, "--out", dir / "jobs"},
                  {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_UID", "65534"}, {"SLURM_JOB_END_TIME", ends}});
  EXPECT_EQ(prolog.exit_code, 0) << prolog.err;
  const RunResult listed = run_process({LEASEGUARD_BIN, "lease", "list", "--json", "--socket", socket});
  JsonValue leases;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(listed.out, leases, error)) << error << listed.out;
  ASSERT_EQ(leases.size(), 1u) << listed.out;
  EXPECT_EQ(leases[0]["name"].as_string(), "77");
  EXPECT_EQ(leases[0]["owner"].as_number(), 65534);
  EXPECT_EQ(leases[0]["teardown"].as_string(), "terminate");
  // An hour, less what the prolog and this test took (far less than half of it).
  EXPECT_LE(leases[0]["ttl_remaining_ms"].as_number(), 3600 * 1000);
  EXPECT_GT(leases[0]["ttl_remaining_ms"].as_number(), 1800 * 1000);
  // The job's directory is the user's; the lease's id beside it, root's.
  struct stat status {};
  ASSERT_EQ(stat((dir / "jobs/77").c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, 65534u);
  EXPECT_EQ(status.st_mode & 0777, 0700u);
  EXPECT_EQ(read_text(dir / "jobs/77.lease"), "1\n");
}

}  // namespace
