// A journal whose writer still runs is a running process, not a crash: `report`, `diff` and
// `top` say it runs and count what it holds as live; only once it is gone does anything of
// it become a leak (tests/victims/gated_service.c). Its liveness is the lock the writer holds
// on its journal (core/journal/writer_liveness.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

RunResult run_leaseguard(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), LEASEGUARD_BIN);
  return run_process(arguments);
}

// `leaseguard run` of the service in the background, until stop() opens its gate.
class GatedService {
 public:
  // `options`: more of run's flags, before the command.
  GatedService(const std::string &out, const std::string &dir, const std::vector<std::string> &options = {})
      : ready_(dir + "/ready"), gate_(dir + "/gate") {
    EXPECT_EQ(mkfifo(gate_.c_str(), 0600), 0);
    std::vector<std::string> arguments = {"leaseguard", "run", "--sim", "--quiet", "--out", out};
    arguments.insert(arguments.end(), options.begin(), options.end());
    arguments.insert(arguments.end(), {"--", victim("gated_service"), ready_, gate_});
    std::vector<char *> argv;
    for (std::string &argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    run_ = fork();
    if (run_ == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      execv(LEASEGUARD_BIN, argv.data());
      _exit(127);
    }
    // Its allocations made: the service says so by creating the file.
    while (access(ready_.c_str(), F_OK) != 0) {
      int status = 0;
      if (waitpid(run_, &status, WNOHANG) == run_) {
        ADD_FAILURE() << "the run ended before the service was ready: " << status;
        run_ = -1;
        return;
      }
      std::this_thread::yield();
    }
  }
  ~GatedService() { stop(); }

  int stop() {
    if (run_ <= 0) return -1;
    std::ofstream(gate_) << "stop\n";
    int status = 0;
    waitpid(run_, &status, 0);
    run_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  std::string ready_, gate_;
  pid_t run_ = -1;
};

JsonValue json_report(const std::string &out, const std::string &file) {
  auto result = run_leaseguard({"report", out, "--quiet", "--format", "json=" + file});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  JsonValue json;
  std::string error;
  EXPECT_TRUE(JsonValue::parse(read_text(file), json, error)) << error;
  return json;
}

}  // namespace

TEST(RunningProcess, IsSaidToRunNotToHaveCrashedAndItsMemoryIsLiveNotLeaked) {
  TempDir dir;
  const std::string out = dir / "out";
  GatedService service(out, dir.path());

  const JsonValue running = json_report(out, dir / "running.json");
  ASSERT_EQ(running["processes"].size(), 1u);
  const JsonValue &process = running["processes"][0];
  EXPECT_TRUE(process["running"].as_bool());
  EXPECT_FALSE(process["complete"].as_bool());
  EXPECT_EQ(process["live_allocations"].as_number(), 2);
  EXPECT_EQ(process["live_bytes"].as_number(), 12000);
  EXPECT_EQ(process["leases"].size(), 0u) << "no lease has ended, by crash or otherwise";
  EXPECT_EQ(running["summary"]["leaked_allocations"].as_number(), 0);

  const RunResult text = run_leaseguard({"report", out});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(") is running\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 allocation(s) of 12000 byte(s) live"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("crash"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("died"), std::string::npos) << text.out;
  const RunResult gated = run_leaseguard({"report", out, "--fail-on-leak"});
  EXPECT_EQ(gated.exit_code, 0) << gated.err;  // live is not leaked

  const RunResult diff = run_leaseguard({"diff", out, out});
  EXPECT_NE(diff.out.find(") is running\n"), std::string::npos) << diff.out;
  EXPECT_EQ(diff.out.find("crash"), std::string::npos) << diff.out;

  const RunResult top = run_leaseguard({"top", "--once", "--out", out, "--socket", dir / "no-daemon.sock"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("1 process(es), 11.7 KiB of device memory live"), std::string::npos) << top.out;

  // Stopped: now its leases have ended, by its exit, with the dropped buffer lost.
  EXPECT_EQ(service.stop(), 0);
  const JsonValue ended = json_report(out, dir / "ended.json");
  const JsonValue &after = ended["processes"][0];
  EXPECT_FALSE(after["running"].as_bool());
  EXPECT_TRUE(after["complete"].as_bool());
  EXPECT_EQ(after["leases"][0]["ended_by"].as_string(), "exit");
  EXPECT_EQ(classes_by_size(ended), (std::map<uint64_t, std::string>{{5000, "direct"}, {7000, "reachable"}}));
}

// A writer killed without its end record: its journal is a crash's, as before.
TEST(RunningProcess, AKilledWriterIsACrash) {
  TempDir dir;
  const std::string out = dir / "out", ready = dir / "ready", gate = dir / "gate";
  ASSERT_EQ(mkfifo(gate.c_str(), 0600), 0);
  std::string error;
  const pid_t service = fork();
  if (service == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    setenv("LD_PRELOAD", LEASEGUARD_PRELOAD_PATH, 1);
    setenv("LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR, 1);
    setenv("LEASEGUARD_OUT", out.c_str(), 1);
    execl(victim("gated_service").c_str(), "gated_service", ready.c_str(), gate.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  while (access(ready.c_str(), F_OK) != 0) std::this_thread::yield();
  kill(service, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(service, &status, 0), service);
  const JsonValue json = json_report(out, dir / "killed.json");
  const JsonValue &process = json["processes"][0];
  EXPECT_FALSE(process["running"].as_bool());
  EXPECT_EQ(process["leases"][0]["ended_by"].as_string(), "crash");
  EXPECT_EQ(json["summary"]["leaked_allocations"].as_number(), 2);  // a crash's are unclassified
}

// `run --check-every`: a service that never ends by itself is checked while it runs, from
// leaseguard's own thread; `report` of it running lists the checks as they come, each with the
// dropped buffer lost and the kept one reachable, and the service ends as it would have.
TEST(RunningProcess, ChecksEveryPeriodWhileItRuns) {
  TempDir dir;
  const std::string out = dir / "out";
  GatedService service(out, dir.path(), {"--check-every", "20ms"});
  JsonValue running;
  for (int reports = 1;; ++reports) {  // until two checks are recorded: an event, however slow the machine
    running = json_report(out, dir / ("running" + std::to_string(reports) + ".json"));
    ASSERT_EQ(running["processes"].size(), 1u);
    if (running["processes"][0]["checks"].size() >= 2) break;
  }
  EXPECT_TRUE(running["processes"][0]["running"].as_bool());
  for (const JsonValue &check : running["processes"][0]["checks"].items()) {
    EXPECT_EQ(check["lost_allocations"].as_number(), 1);
    EXPECT_EQ(check["lost_bytes"].as_number(), 5000);
    EXPECT_EQ(check["reachable_allocations"].as_number(), 1);
    EXPECT_EQ(check["reachable_bytes"].as_number(), 7000);
  }
  EXPECT_EQ(service.stop(), 0);
  const JsonValue ended = json_report(out, dir / "ended.json");
  EXPECT_GE(ended["processes"][0]["checks"].size(), 2u);
  EXPECT_EQ(ended["summary"]["leaked_allocations"].as_number(), 1);
  EXPECT_EQ(ended["summary"]["reachable_allocations"].as_number(), 1);
}
