// A `leaseguard daemon` of a test's own (tests/integration/lease_authority_test.cpp,
// slurm_test.cpp), started and ended with the test.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace leaseguard::testing {

// A `leaseguard daemon` of the test's own, on a socket and state directory in `dir`.
// With `with_nvml` it finds the simulator's libnvidia-ml.so.1, which reports what the job's
// simulated processes hold (they publish it in dir/usage); without, it has no NVML to ask.
// `environment`: more variables for it (the simulator's LEASEGUARD_SIM_DEVICES).
class Daemon {
 public:
  explicit Daemon(const std::string &dir, bool with_nvml = true, std::vector<std::string> extra = {},
                  std::map<std::string, std::string> environment = {})
      : dir_(dir), with_nvml_(with_nvml), extra_(std::move(extra)), environment_(std::move(environment)) {
    start();
  }
  ~Daemon() { stop(SIGTERM); }

  void start() {
    int lines[2];
    ASSERT_EQ(pipe(lines), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(lines[1], 2);
      close(lines[0]);
      setenv("LEASEGUARD_SIM_USAGE_DIR", (dir_ + "/usage").c_str(), 1);
      if (with_nvml_) setenv("LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR, 1);
      else unsetenv("LD_LIBRARY_PATH");
      for (const auto &[name, value] : environment_) setenv(name.c_str(), value.c_str(), 1);
      std::vector<std::string> argv = {LEASEGUARD_BIN, "daemon", "--socket", socket(), "--state", dir_ + "/state"};
      argv.insert(argv.end(), extra_.begin(), extra_.end());
      std::vector<char *> args;
      for (std::string &argument : argv) args.push_back(argument.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(lines[1]);
    // Ready once it says where it listens.
    std::string said;
    char byte;
    while (said.find('\n') == std::string::npos && read(lines[0], &byte, 1) == 1) said += byte;
    close(lines[0]);
    ASSERT_NE(said.find("listening at"), std::string::npos) << said;
    said_ = said;
  }
  // Its first line ("listening at ..., metrics at http://HOST:PORT/metrics, ...").
  const std::string &said() const { return said_; }
  // Ends it with `signal`; its exit status as a shell gives it.
  int stop(int signal) {
    if (pid_ <= 0) return -1;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  std::string socket() const { return dir_ + "/leaseguard.sock"; }
  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  bool with_nvml_;
  std::vector<std::string> extra_;
  std::map<std::string, std::string> environment_;
  std::string said_;
  pid_t pid_ = 0;
};

}  // namespace leaseguard::testing
