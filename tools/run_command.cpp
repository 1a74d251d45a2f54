// Implementation of `leaseguard run`.
//
// The whole tree is followed without tracing: LD_PRELOAD and the LEASEGUARD_* variables are
// inherited by every child and exec'd program, each of which writes its own journal tagged
// with this run's id. leaseguard becomes a child subreaper, so orphaned descendants are
// reparented to it, and it collects every exit status of the tree before reporting.
#include "run_command.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "files.h"
#include "install_paths.h"
#include "options.h"
#include "pid_namespace.h"
#include "report_model.h"
#include "suppressions.h"
#include "report_output.h"
#include "run_directories.h"
#include "sanitizer_runtime.h"

extern char **environ;

namespace leaseguard::cli {
namespace {

volatile sig_atomic_t g_child_pid = 0;

void forward_signal(int signal_number) {
  if (g_child_pid > 0) kill(g_child_pid, signal_number);
}

void fail(const std::string &message) { std::fprintf(stderr, "leaseguard: error: %s\n", message.c_str()); }

std::string absolute(const std::string &path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

// Exit statuses for a command that cannot be run, as shells give them.
constexpr int kCommandNotFound = 127, kCommandNotExecutable = 126;

// What execvp would run (stored in `found`). A command that cannot be run is said before
// anything starts, and `exit_status` is what a shell would exit with: 127 not found, 126 found
// but not executable.
bool find_executable(const std::string &command, std::string &found, int &exit_status, std::string &error) {
  auto runnable = [&](const std::string &path) {
    struct stat status;
    found = path;
    return stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (command.find('/') != std::string::npos) {
    if (runnable(command)) return true;
    const bool exists = access(command.c_str(), F_OK) == 0;
    exit_status = exists ? kCommandNotExecutable : kCommandNotFound;
    error = "cannot run '" + command + "': " + (exists ? "not an executable file" : "no such file");
    return false;
  }
  const char *path = std::getenv("PATH");
  std::string search = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= search.size()) {
    size_t colon = search.find(':', start);
    std::string dir = search.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    if (runnable(dir + "/" + command)) return true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  exit_status = kCommandNotFound;
  error = "cannot run '" + command + "': command not found";
  return false;
}

std::string make_run_id() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char buffer[64];
  std::snprintf(
      buffer, sizeof buffer, "lg-%llx-%d",
      static_cast<unsigned long long>(now.tv_sec) * 1000000ull + static_cast<unsigned long long>(now.tv_nsec / 1000),
      static_cast<int>(getpid()));
  return buffer;
}

// LD_PRELOAD for the command: leaseguard's preload, after the sanitizer runtime the
// program needs first (sanitizer_runtime.h) unless the user's LD_PRELOAD has it already,
// then the user's.
std::string preload_list(const InstallPaths &paths, const std::string &executable) {
  const char *user = std::getenv("LD_PRELOAD");
  const std::string users = user != nullptr ? user : "";
  std::string list = paths.preload + (users.empty() ? "" : ":" + users);
  const std::optional<std::string> runtime = sanitizer_runtime(needed_libraries(executable));
  if (runtime && users.find(*runtime) == std::string::npos) list = *runtime + ":" + list;
  return list;
}

// `recording_disabled`: the command will see LEASEGUARD_DISABLE=1 (its report says so).
std::vector<std::string> child_environment(const RunOptions &options, const InstallPaths &paths,
                                           const std::string &executable, const std::string &run_dir,
                                           const std::string &run_id, const RunExtras *extras,
                                           bool &recording_disabled) {
  std::map<std::string, std::string> overrides;
  if (extras != nullptr) overrides = extras->environment;
  overrides["LD_PRELOAD"] = preload_list(paths, executable);
  if (options.sim) {
    const char *library_path = std::getenv("LD_LIBRARY_PATH");
    overrides["LD_LIBRARY_PATH"] =
        paths.sim_library_dir +
        (library_path != nullptr && *library_path != '\0' ? ":" + std::string(library_path) : "");
  }
  overrides["LEASEGUARD_OUT"] = run_dir;
  overrides["LEASEGUARD_RUN_ID"] = run_id;
  if (const uint64_t pid_namespace = pid_namespace_of(); pid_namespace != 0)
    overrides["LEASEGUARD_RUN_PID_NAMESPACE"] = std::to_string(pid_namespace);
  // The settings run's flags gave (core/base/option_table.h), as given. The process lease's
  // policy is run's to say: report, unless --on-expiry says otherwise.
  overrides["LEASEGUARD_ON_EXPIRY"] = std::string(policy_name(Policy::Report));
  for (const auto &[variable, value] : options.settings) overrides[variable] = value;
  if (options.common.quiet) overrides["LEASEGUARD_LOG"] = "quiet";
  // For what in the program wants to know the report will apply suppressions (the GoogleTest
  // listener, include/leaseguard/gtest.hpp); the preload does not read it.
  if (!options.common.suppressions.empty())
    overrides["LEASEGUARD_SUPPRESSIONS"] = std::filesystem::absolute(options.common.suppressions).string();

  // The preload of each process would say what is wrong with these; run says it once
  // (options.h, settings_checked_by_run).
  std::vector<std::string> warnings;
  recording_disabled = parse_options(
                           [&](const char *name) -> const char * {
                             auto found = overrides.find(name);
                             return found != overrides.end() ? found->second.c_str() : std::getenv(name);
                           },
                           warnings, wall_clock_ns())
                           .disabled;
  if (!options.common.quiet)
    for (const std::string &warning : warnings) std::fprintf(stderr, "leaseguard: %s\n", warning.c_str());

  std::vector<std::string> environment;
  for (char **entry = environ; *entry != nullptr; ++entry) {
    std::string variable(*entry);
    std::string name = variable.substr(0, variable.find('='));
    if (overrides.count(name) == 0) environment.push_back(variable);
  }
  for (const auto &[name, value] : overrides) environment.push_back(name + "=" + value);
  return environment;
}

int status_to_exit_code(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1;
}

}  // namespace

namespace {

// What a run needs before the command starts, each checked so that a mistake is a usage
// error before the command runs, not after: leaseguard's files, the command, the
// suppressions file, the output directory.
// Everything that can be found wrong before the command runs; `status` is the exit status
// for it (leaseguard's usage error, or a shell's for a command that cannot be run).
bool prepare(const RunOptions &options, InstallPaths &paths, std::string &executable, std::string &out_dir, int &status,
             std::string &error) {
  status = kUsageError;
  if (!find_install_paths(paths, options.sim, error) || !find_executable(options.command[0], executable, status, error))
    return false;
  report::Suppressions suppressions;
  if (!options.common.suppressions.empty() && !suppressions.load(options.common.suppressions, error)) return false;
  out_dir = absolute(options.common.out_dir);
  // The output directory first: --format paths often lie in it.
  return make_output_directory(out_dir, error) && check_format_paths(options.common, error);
}

// Starts the command with `environment`; 0 and `error` set if it cannot. leaseguard becomes
// a child subreaper (orphaned grandchildren come back to it, so every process of the tree
// is waited for), outlives a terminal's ^C to report (it reaches the whole foreground
// group), and forwards SIGTERM and SIGHUP to the command.
pid_t start_command(const std::vector<std::string> &command, const std::vector<std::string> &environment,
                    std::string &error) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction forward {
  }, ignore{};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_int, old_quit, old_term, old_hup;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);

  std::vector<char *> argv, envp;
  for (const std::string &argument : command) argv.push_back(const_cast<char *>(argument.c_str()));
  argv.push_back(nullptr);
  for (const std::string &variable : environment) envp.push_back(const_cast<char *>(variable.c_str()));
  envp.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    error = std::string("cannot start the command: ") + std::strerror(errno);
    return 0;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    environ = envp.data();
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "leaseguard: error: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  g_child_pid = child;
  return child;
}

// Waits for every process of the tree; each one's exit status, and the command's own
// (`command_ended` is told it as soon as it comes).
report::ExitStatuses wait_for_the_tree(pid_t command, int &command_status,
                                       const std::function<void(int)> &command_ended) {
  report::ExitStatuses exits;
  while (true) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the whole tree has ended
    }
    if (pid == command) {
      command_status = status;
      if (command_ended) command_ended(status);
    }
    report::ExitStatus &exit = exits[pid];
    if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
    else if (WIFEXITED(status)) exit.code = WEXITSTATUS(status);
  }
  g_child_pid = 0;
  return exits;
}

// The run's report, from its journals (in `run_dir`) and the exit statuses it collected;
// false on an error that is leaseguard's own (unreadable journals).
bool report_the_run(const RunOptions &options, const std::string &out_dir, const std::string &run_dir,
                    const std::string &run_id, const report::ExitStatuses &exits, report::Report &report,
                    std::string &error) {
  // For `leaseguard report` of the directory later. This run's own report has them in
  // memory, so a file system too full for them (often the one the journals filled) costs
  // only that, never the command's exit status.
  if (!report::write_exit_statuses(run_dir + "/" + run_id + ".exits", exits, error))
    std::fprintf(stderr, "leaseguard: warning: %s; a later report of %s will not know how its processes ended\n",
                 error.c_str(), run_dir.c_str());
  Inputs inputs;
  if (!collect_inputs({run_dir}, run_id, inputs, error)) return false;
  inputs.exit_statuses = exits;
  // A format file that cannot be written (a full disk) is said, but the exit status stays
  // the program's: the text report has been printed, and the journals are there.
  std::vector<std::string> unwritten;
  if (!produce_report(inputs, options.common, out_dir, stderr, report, error, &unwritten,
                      run_dir + "/" + kRunReportName))
    return false;
  for (const std::string &problem : unwritten) std::fprintf(stderr, "leaseguard: warning: %s\n", problem.c_str());
  return true;
}

}  // namespace

int run_command(const RunOptions &options, const RunExtras *extras) {
  std::string error, executable, out_dir;
  InstallPaths paths;
  int status = kUsageError;
  if (!prepare(options, paths, executable, out_dir, status, error)) {
    fail(error);
    return status;
  }
  const std::optional<std::string> run_dir = start_run_directory(out_dir, error);
  if (!run_dir) {
    fail(error);
    return kUsageError;
  }
  const std::string run_id = make_run_id();
  report::Report report;
  const pid_t command = start_command(
      options.command,
      child_environment(options, paths, executable, *run_dir, run_id, extras, report.recording_disabled), error);
  if (command == 0) {
    fail(error);
    return kUsageError;
  }
  int command_status = 0;
  const report::ExitStatuses exits =
      wait_for_the_tree(command, command_status, extras != nullptr ? extras->command_ended : nullptr);
  if (extras != nullptr && extras->tree_ended) extras->tree_ended(exits, command_status, report);
  report.simulated = options.sim;
  if (!report_the_run(options, out_dir, *run_dir, run_id, exits, report, error)) {
    fail(error);
    return kUsageError;
  }
  if (options.keep_runs && !prune_runs(out_dir, *options.keep_runs, error))
    std::fprintf(stderr, "leaseguard: warning: %s\n", error.c_str());
  // A gate that checked nothing says so where CI logs look, also when the text report went
  // elsewhere or nowhere (--quiet).
  if (options.common.fail_on_leak)
    if (const std::string nothing = report::nothing_checked(report); !nothing.empty())
      std::fprintf(stderr, "leaseguard: warning: --fail-on-leak had nothing to check: %s\n", nothing.c_str());
  if (options.common.fail_on_leak && report.leaked_allocations() > 0) return *options.common.fail_on_leak;
  return status_to_exit_code(command_status);
}

}  // namespace leaseguard::cli
