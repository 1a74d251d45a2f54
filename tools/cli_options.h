// Parsing of the leaseguard command line into one struct per subcommand.
//
// Every problem is one line of text for the user; the caller prints it and exits 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api_ids.h"
#include "authority_protocol.h"
#include "daemon_server.h"
#include "options.h"
#include "top_command.h"

namespace leaseguard::cli {

inline constexpr int kUsageError = 2;
inline constexpr int kDefaultLeakExitCode = 23;

struct FormatRequest {
  std::string format;  // text | json | sarif | junit | folded
  std::string path;    // empty: a file in the output directory
};

struct CommonOptions {
  std::string out_dir = "leaseguard-out";
  bool out_dir_given = false;
  std::vector<FormatRequest> formats;
  std::optional<int> fail_on_leak;  // the exit code when an unsuppressed leak remains
  bool quiet = false;
  std::string suppressions;       // file of leak: lines; empty: none
  bool gen_suppressions = false;  // print a ready suppression for each leak group
  bool show_reachable = false;    // list reachable allocations, not only count them
  std::string source_root;        // SARIF paths are relative to it; empty: the cwd
  // Filters: only leaks that pass all of them are reported.
  uint64_t min_bytes = 0;
  std::string lease_pattern;  // lease name, * wildcard
  std::string api_pattern;    // entry point, * wildcard
  std::optional<Kind> kind;
  size_t max_groups = 0;  // text: groups shown per lease ending; 0: all
  std::string baseline;   // journals or a JSON report: their leak groups are not new
};

struct RunOptions {
  CommonOptions common;
  bool sim = false;
  // The settings its flags gave (core/base/option_table.h), each as given, checked, passed on
  // to the command as its variable; and the same applied, for what run reads of them.
  std::vector<std::pair<std::string, std::string>> settings;  // (variable, value)
  Options values;
  std::optional<size_t> keep_runs;  // --keep N: the newest N runs stay under --out
  std::vector<std::string> command;
};

struct ReportOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  bool all_runs = false;  // a directory of runs: every run, not only the newest
};

// `leaseguard check PID`: a live check of a running process (docs/usage.md).
struct CheckOptions {
  CommonOptions common;
  int pid = 0;
  uint64_t timeout_ms = 60'000;  // how long it waits for the process's answer
};

// `leaseguard lease ...`: asks the node lease authority (docs/lease-authority.md).
enum class LeaseVerb { Start, List, End, Extend };

struct LeaseOptions {
  LeaseVerb verb = LeaseVerb::List;
  std::string socket;  // --socket; empty: the default (authority::socket_path)
  // start: the lease asked for, and the command run under it with run's options.
  std::string name;
  uint64_t ttl_ms = 0;
  authority::Teardown teardown = authority::Teardown::Report;
  uint64_t grace_ms = authority::kDefaultGraceMs;
  RunOptions run;
  std::string target;      // end, extend: NAME|ID
  uint64_t extend_ms = 0;  // extend: DURATION
  bool json = false;       // list --json
};

// `leaseguard slurm prolog|task-prolog|epilog`: a Slurm job under one lease
// (docs/lease-authority.md, "Slurm").
enum class SlurmStage { Prolog, TaskProlog, Epilog };

struct SlurmOptions {
  SlurmStage stage = SlurmStage::Prolog;
  // The lease each job gets: --socket, --on-expiry (terminate unless told), --grace.
  LeaseOptions lease{.teardown = authority::Teardown::Terminate};
  std::string jobs_dir = "/var/lib/leaseguard/slurm";  // --out: DIR/JOBID per job
  bool sim = false;                                    // task-prolog: the simulated GPU
};

enum class Subcommand { Help, Version, Run, Report, Diff, Check, Daemon, Lease, Top, Slurm };

struct Command {
  Subcommand subcommand = Subcommand::Help;
  RunOptions run;
  ReportOptions report;
  CheckOptions check;
  authority::DaemonOptions daemon;
  LeaseOptions lease;
  TopOptions top;
  SlurmOptions slurm;
};

// Parses argv[1..]. On error returns false with `error` set.
bool parse_command_line(const std::vector<std::string> &arguments, Command &command, std::string &error);

std::string usage_text();

}  // namespace leaseguard::cli
