// Runs a program with extra environment, capturing its exit status, stdout and stderr.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "json_value.h"

namespace leaseguard::testing {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N, as a shell reports it
  std::string out;
  std::string err;
};

RunResult run_process(const std::vector<std::string> &argv, const std::map<std::string, std::string> &environment = {},
                      const std::vector<std::string> &unset = {});

// The same, running `in_child` in the child just before exec (it may use getpid(): the
// program keeps that pid).
RunResult run_process_with_setup(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &environment,
                                 const std::function<void()> &in_child);

// `leaseguard run --sim --out DIR --format json=DIR/report.json [extra] -- command...`
struct LeaseguardRun {
  RunResult result;
  report::JsonValue json;  // the JSON report
};
LeaseguardRun run_under_leaseguard(const std::string &out_dir, const std::vector<std::string> &command,
                                   const std::vector<std::string> &extra_options = {},
                                   const std::map<std::string, std::string> &environment = {});

// For victims whose forked children use the device their parent initialized: no driver
// allows it (the simulator refuses it too by default, as the driver does), but it is how a
// test makes a child whose records the tool must keep apart from its parent's.
inline const std::map<std::string, std::string> kForkedChildrenInherit = {{"LEASEGUARD_SIM_FORKED_CHILD", "inherits"}};

// A command run with its stdin and stdout as pipes of the test's: lines sent, lines read.
class Conversation {
 public:
  explicit Conversation(std::vector<std::string> arguments, const std::map<std::string, std::string> &environment = {});
  ~Conversation();
  Conversation(const Conversation &) = delete;
  Conversation &operator=(const Conversation &) = delete;
  void send(const std::string &line);
  // The next line, without its newline; "" at the end of the output.
  std::string line();
  // Its exit status (128+N for signal N), once it has ended.
  int wait();

 private:
  pid_t pid_ = -1;
  FILE *to_ = nullptr;
  FILE *from_ = nullptr;
};

std::string read_text(const std::string &path);
std::string victim(const std::string &name);

// A free TCP port on 127.0.0.1 (the kernel's pick; free again once this returns).
int free_port();

// Every leak of every process and lease in a JSON report.
std::vector<const report::JsonValue *> all_leaks(const report::JsonValue &json);
// Each leak's class ("direct", "reachable"...) by its size in bytes (the victims make sizes
// unique).
std::map<uint64_t, std::string> classes_by_size(const report::JsonValue &json);
// The function of a leak's first frame, or "" where unknown.
std::string first_function(const report::JsonValue &leak);
// For each leak, the function of its first frame and the module that frame is in.
std::multimap<std::string, std::string> first_functions_and_modules(
    const std::vector<const report::JsonValue *> &leaks);
// For each leak of the first process, the function of its first frame and how the lease that
// reported it ended ("exit", "context_destroy"...).
std::map<std::string, std::string> ended_by_of_first_functions(const report::JsonValue &json);

}  // namespace leaseguard::testing
