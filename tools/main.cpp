// leaseguard's command-line entry point: dispatch to run, report, diff, daemon and lease.
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "check_command.h"
#include "cli_options.h"
#include "daemon_server.h"
#include "files.h"
#include "lease_command.h"
#include "report_output.h"
#include "run_command.h"
#include "run_directories.h"
#include "slurm_command.h"
#include "top_command.h"

#ifndef LEASEGUARD_VERSION
#define LEASEGUARD_VERSION "0.0.0"
#endif

namespace {

using namespace leaseguard::cli;

// `report`, and `diff` (the same with a baseline, failing when something is new).
int report_command(const ReportOptions &options, bool diff) {
  std::string error;
  Inputs inputs;
  // A directory of runs (run's --out) is read for its newest run, unless --all-runs.
  std::vector<std::string> paths = options.paths;
  if (!options.all_runs)
    for (std::string &path : paths)
      if (std::optional<std::string> newest = newest_run(path)) path = *newest;
  if (!collect_inputs(paths, "", inputs, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  if (inputs.journals.empty() && inputs.report_files.empty()) {
    std::fprintf(stderr, "leaseguard: error: no journals or JSON reports found in the given paths\n");
    return kUsageError;
  }
  // Before the work: an output directory it can make and paths it can write.
  std::string dir = options.common.out_dir_given ? options.common.out_dir : ".";
  if ((options.common.out_dir_given && !leaseguard::make_output_directory(dir, error)) ||
      !check_format_paths(options.common, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  leaseguard::report::Report report;
  if (!produce_report(inputs, options.common, dir, stdout, report, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  bool damaged = false;
  for (const auto &process : report.processes) damaged = damaged || process.read_stats.damaged();
  if (damaged) {
    std::fprintf(stderr, "leaseguard: error: damaged journal input; the report above is partial\n");
    return kUsageError;
  }
  if (diff) return report.leaked_allocations() > 0 ? options.common.fail_on_leak.value_or(kDefaultLeakExitCode) : 0;
  if (options.common.fail_on_leak && report.leaked_allocations() > 0) return *options.common.fail_on_leak;
  return 0;
}

int dispatch(int argc, char **argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  Command command;
  std::string error;
  if (!parse_command_line(arguments, command, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\nTry 'leaseguard --help'.\n", error.c_str());
    return kUsageError;
  }
  switch (command.subcommand) {
    case Subcommand::Help: std::fputs(usage_text().c_str(), stdout); return 0;
    case Subcommand::Version:
      std::printf("leaseguard %s\nreports name frames with: %s\n", LEASEGUARD_VERSION, LEASEGUARD_SYMBOLS);
      return 0;
    case Subcommand::Run: return run_command(command.run);
    case Subcommand::Report: return report_command(command.report, false);
    case Subcommand::Diff: return report_command(command.report, true);
    case Subcommand::Check: return check_command(command.check);
    case Subcommand::Daemon: return leaseguard::authority::run_daemon(command.daemon);
    case Subcommand::Lease: return lease_command(command.lease);
    case Subcommand::Top: return top_command(command.top);
    case Subcommand::Slurm: return slurm_command(command.slurm);
  }
  return kUsageError;
}

}  // namespace

int main(int argc, char **argv) {
  // Memory runs out (a journal too large for the memory the tool was given): one line and
  // the documented status for leaseguard's own failures, never an abort.
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fputs("leaseguard: error: out of memory\n", stderr);
    return kUsageError;
  }
}
