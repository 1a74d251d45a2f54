// Implementation of the test process runner.
#include "process_runner.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char **environ;

namespace leaseguard::testing {

RunResult run_process_with_setup(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &environment,
                                 const std::function<void()> &in_child, const std::vector<std::string> &unset);

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string victim(const std::string &name) { return std::string(LEASEGUARD_VICTIMS) + "/" + name; }

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size);
  close(fd);
  return ntohs(address.sin_port);
}

RunResult run_process(const std::vector<std::string> &argv, const std::map<std::string, std::string> &environment,
                      const std::vector<std::string> &unset) {
  return run_process_with_setup(argv, environment, nullptr, unset);
}

RunResult run_process_with_setup(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &environment,
                                 const std::function<void()> &in_child) {
  return run_process_with_setup(argv, environment, in_child, {});
}

RunResult run_process_with_setup(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &environment,
                                 const std::function<void()> &in_child, const std::vector<std::string> &unset) {
  char out_path[] = "/tmp/leaseguard-out-XXXXXX";
  char err_path[] = "/tmp/leaseguard-err-XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  std::vector<std::string> variables;
  for (char **entry = environ; *entry != nullptr; ++entry) {
    std::string variable(*entry);
    std::string name = variable.substr(0, variable.find('='));
    bool drop = environment.count(name) != 0;
    for (const std::string &removed : unset) drop = drop || removed == name;
    // The tests decide what leaseguard sees; an outer leaseguard run must not leak in.
    drop = drop || name.rfind("LEASEGUARD_", 0) == 0 || name == "LD_PRELOAD";
    if (!drop) variables.push_back(variable);
  }
  for (const auto &[name, value] : environment) variables.push_back(name + "=" + value);
  std::vector<char *> envp, args;
  for (auto &variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto &argument : argv_copy) args.push_back(argument.data());
  args.push_back(nullptr);

  pid_t child = fork();
  if (child == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    if (in_child) in_child();
    execve(args[0], args.data(), envp.data());
    _exit(126);
  }
  int status = 0;
  waitpid(child, &status, 0);
  close(out_fd);
  close(err_fd);
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out_path);
  result.err = read_text(err_path);
  unlink(out_path);
  unlink(err_path);
  return result;
}

LeaseguardRun run_under_leaseguard(const std::string &out_dir, const std::vector<std::string> &command,
                                   const std::vector<std::string> &extra_options,
                                   const std::map<std::string, std::string> &environment) {
  std::vector<std::string> argv = {
      LEASEGUARD_BIN, "run", "--sim", "--out", out_dir, "--format", "json=" + out_dir + "/report.json"};
  argv.insert(argv.end(), extra_options.begin(), extra_options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  LeaseguardRun run;
  run.result = run_process(argv, environment);
  std::string error;
  report::JsonValue::parse(read_text(out_dir + "/report.json"), run.json, error);
  return run;
}

std::vector<const report::JsonValue *> all_leaks(const report::JsonValue &json) {
  std::vector<const report::JsonValue *> leaks;
  for (const auto &process : json["processes"].items())
    for (const auto &lease : process["leases"].items())
      for (const auto &leak : lease["leaks"].items()) leaks.push_back(&leak);
  return leaks;
}

std::map<uint64_t, std::string> classes_by_size(const report::JsonValue &json) {
  std::map<uint64_t, std::string> classes;
  for (const report::JsonValue *leak : all_leaks(json))
    classes[static_cast<uint64_t>((*leak)["bytes"].as_number())] = (*leak)["reachability"].as_string();
  return classes;
}

std::string first_function(const report::JsonValue &leak) {
  const report::JsonValue &function = leak["stack"][0]["function"];
  return function.is_null() ? "" : function.as_string();
}

std::map<std::string, std::string> ended_by_of_first_functions(const report::JsonValue &json) {
  std::map<std::string, std::string> ended_by_of;
  for (const auto &lease : json["processes"][0]["leases"].items())
    for (const auto &leak : lease["leaks"].items()) ended_by_of[first_function(leak)] = lease["ended_by"].as_string();
  return ended_by_of;
}

std::multimap<std::string, std::string> first_functions_and_modules(
    const std::vector<const report::JsonValue *> &leaks) {
  std::multimap<std::string, std::string> named;
  for (const report::JsonValue *leak : leaks) {
    const report::JsonValue &module = (*leak)["stack"][0]["module"];
    named.emplace(first_function(*leak), module.is_null() ? "" : module.as_string());
  }
  return named;
}

Conversation::Conversation(std::vector<std::string> arguments, const std::map<std::string, std::string> &environment) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
  std::vector<char *> argv;
  for (std::string &argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    for (const auto &[name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
}

Conversation::~Conversation() {
  if (to_ != nullptr) fclose(to_);
  if (from_ != nullptr) fclose(from_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

void Conversation::send(const std::string &line) {
  std::fputs((line + "\n").c_str(), to_);
  std::fflush(to_);
}

std::string Conversation::line() {
  char buffer[4096];
  if (std::fgets(buffer, sizeof buffer, from_) == nullptr) return "";
  std::string text(buffer);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

int Conversation::wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace leaseguard::testing
