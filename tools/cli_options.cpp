// Implementation of command-line parsing.
#include "cli_options.h"

#include <cstdint>

#include "cli_flags.h"
#include "option_table.h"
#include "options.h"

namespace leaseguard::cli {
namespace {

// Which flags a command takes, and how its operands end its options.
struct Grammar {
  std::string name;      // as errors name the command: "run", "lease list"
  unsigned commands;     // the rows of cli_flags.h it takes
  bool settings;         // the flags of the table of settings (option_table.h) too
  bool command_follows;  // the first operand begins a command: it and all after it are operands
  bool operands = true;  // it takes operands at all
  // Its operands are process ids (check): a number after a flag whose value comes after
  // '=' is the operand it looks like, not a value mistyped.
  bool process_operands = false;
};

// Fetches the value of a flag given as "--name=value" or "--name value"; `index` is advanced
// past a separate value.
bool take_value(const std::vector<std::string> &arguments, size_t &index, const std::string &name,
                const std::optional<std::string> &inline_value, std::string &value, std::string &error) {
  if (inline_value) {
    value = *inline_value;
  } else {
    if (index + 1 >= arguments.size()) {
      error = "option " + name + " needs a value";
      return false;
    }
    value = arguments[++index];
  }
  if (value.empty()) {
    error = "option " + name + " needs a non-empty value";
    return false;
  }
  return true;
}

// A flag of the table of settings: checked as the preload would read it, passed on as given.
bool parse_setting(const OptionRow &row, const std::string &value, RunOptions &run, std::string &error) {
  if (!row.apply(value, run.values)) {
    error = std::string(row.flag) + " " + value + ": must be " + std::string(row.expect);
    return false;
  }
  std::erase_if(run.settings, [&](const auto &setting) { return setting.first == row.variable; });
  run.settings.emplace_back(row.variable, value);
  return true;
}

// A flag of cli_flags.h's table, given as its form says.
bool apply_flag(const FlagRow &row, const std::vector<std::string> &arguments, size_t &index,
                const std::optional<std::string> &inline_value, const Grammar &grammar, FlagTargets &targets,
                std::string &error) {
  const std::string name(row.flag);
  std::string value;
  switch (row.form) {
    case ValueForm::None:
      if (inline_value) error = name + " takes no value";
      return !inline_value && row.apply(value, targets, error);
    case ValueForm::AfterEquals: {
      // `--fail-on-leak 5` would run (or read) "5": a number there was meant as the value.
      const std::string next = index + 1 < arguments.size() ? arguments[index + 1] : "";
      if (!inline_value && !grammar.process_operands && !next.empty() && next.size() <= 3 &&
          next.find_first_not_of("0123456789") == std::string::npos) {
        error = name + " takes its value after '=': " + name + "=" + next;
        return false;
      }
      return row.apply(inline_value.value_or(""), targets, error);
    }
    case ValueForm::Required:
      return take_value(arguments, index, name, inline_value, value, error) && row.apply(value, targets, error);
  }
  return false;
}

bool parse_flag(const std::vector<std::string> &arguments, size_t &index, const Grammar &grammar, FlagTargets &targets,
                std::string &error) {
  const std::string &argument = arguments[index];
  const size_t equals = argument.find('=');
  const std::string name = argument.substr(0, equals);
  std::optional<std::string> inline_value;
  if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
  if (const FlagRow *row = flag_for(name, grammar.commands))
    return apply_flag(*row, arguments, index, inline_value, grammar, targets, error);
  const OptionRow *setting = grammar.settings ? option_with_flag(name) : nullptr;
  if (setting == nullptr) {
    error = "unknown option " + name + " for '" + grammar.name + "'";
    return false;
  }
  std::string value;
  return take_value(arguments, index, name, inline_value, value, error) &&
         parse_setting(*setting, value, *targets.run, error);
}

// The flags and operands of one command, from arguments[index] on. "--" ends the flags.
bool parse_flags(const std::vector<std::string> &arguments, size_t index, const Grammar &grammar, FlagTargets &targets,
                 std::vector<std::string> &operands, std::string &error) {
  bool flags_done = false;
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    if (!flags_done && argument == "--") {
      flags_done = true;
    } else if (flags_done || argument.rfind("--", 0) != 0) {
      if (!grammar.operands) {
        error = "'" + grammar.name + "' takes no operands: " + argument;
        return false;
      }
      if (!grammar.command_follows) {
        operands.push_back(argument);
        continue;
      }
      operands.assign(arguments.begin() + static_cast<long>(index), arguments.end());
      return true;
    } else if (!parse_flag(arguments, index, grammar, targets, error)) {
      return false;
    }
  }
  return true;
}

bool parse_run(const std::vector<std::string> &arguments, size_t index, RunOptions &run, std::string &error) {
  FlagTargets targets{.common = &run.common, .run = &run};
  if (!parse_flags(arguments, index, {"run", kRun | kFilter, true, true}, targets, run.command, error)) return false;
  if (run.command.empty()) {
    error = "'run' needs a command: leaseguard run [OPTIONS] -- COMMAND [ARG...]";
    return false;
  }
  return true;
}

bool parse_report(const std::vector<std::string> &arguments, size_t index, ReportOptions &report, std::string &error) {
  FlagTargets targets{.common = &report.common, .report = &report};
  if (!parse_flags(arguments, index, {arguments[0], kReport | kFilter, false, false}, targets, report.paths, error))
    return false;
  if (report.paths.empty()) {
    error = "'report' needs at least one journal or directory";
    return false;
  }
  return true;
}

bool parse_check(const std::vector<std::string> &arguments, size_t index, CheckOptions &check, std::string &error) {
  FlagTargets targets{.common = &check.common, .check = &check};
  std::vector<std::string> operands;
  const Grammar grammar{"check", kCheck | kFilter, false, false, true, true};
  if (!parse_flags(arguments, index, grammar, targets, operands, error)) return false;
  if (operands.size() != 1) {
    error = "'check' needs one process: leaseguard check [OPTIONS] PID";
    return false;
  }
  const std::optional<long long> pid = parse_integer(operands[0], 1, INT32_MAX);
  if (!pid) {
    error = "'check' " + operands[0] + ": not a process id";
    return false;
  }
  check.pid = static_cast<int>(*pid);
  return true;
}

bool parse_daemon(const std::vector<std::string> &arguments, size_t index, authority::DaemonOptions &daemon,
                  std::string &error) {
  FlagTargets targets{.daemon = &daemon};
  std::vector<std::string> none;
  return parse_flags(arguments, index, {"daemon", kDaemon, false, false, false}, targets, none, error);
}

bool parse_top(const std::vector<std::string> &arguments, size_t index, TopOptions &top, std::string &error) {
  FlagTargets targets{.top = &top};
  std::vector<std::string> none;
  return parse_flags(arguments, index, {"top", kTop, false, false, false}, targets, none, error);
}

// `lease start`: the lease's own flags (cli_flags.h's kLeaseStart rows: --ttl is the lease's
// here, not the process lease's) and run's, then the command.
bool parse_lease_start(const std::vector<std::string> &arguments, size_t index, LeaseOptions &lease,
                       std::string &error) {
  FlagTargets targets{.common = &lease.run.common, .run = &lease.run, .lease = &lease};
  const Grammar grammar{"lease start", kLeaseStart | kRun | kFilter, true, true};
  if (!parse_flags(arguments, index, grammar, targets, lease.run.command, error)) return false;
  if (lease.run.command.empty()) {
    error = "'lease start' needs a command: leaseguard lease start [OPTIONS] -- COMMAND [ARG...]";
    return false;
  }
  return true;
}

// `lease list [--json]`, `lease end NAME|ID`, `lease extend NAME|ID DURATION`, each with --socket.
bool parse_lease(const std::vector<std::string> &arguments, size_t index, LeaseOptions &lease, std::string &error) {
  if (index >= arguments.size()) {
    error = "'lease' needs what to do: start, list, end or extend";
    return false;
  }
  const std::string &verb = arguments[index++];
  if (verb == "start") {
    lease.verb = LeaseVerb::Start;
    return parse_lease_start(arguments, index, lease, error);
  }
  const size_t wanted = verb == "list" ? 0 : verb == "end" ? 1 : verb == "extend" ? 2 : SIZE_MAX;
  if (wanted == SIZE_MAX) {
    error = "unknown lease command '" + verb + "': start, list, end or extend";
    return false;
  }
  FlagTargets targets{.lease = &lease};
  std::vector<std::string> operands;
  const Grammar grammar{"lease " + verb, wanted == 0 ? kLeaseList : kLeaseOther, false, false};
  if (!parse_flags(arguments, index, grammar, targets, operands, error)) return false;
  if (operands.size() != wanted) {
    error = verb == "list"  ? "'lease list' takes no operands"
            : verb == "end" ? "'lease end' needs the lease: leaseguard lease end NAME|ID"
                            : "'lease extend' needs the lease and a duration: leaseguard lease extend NAME|ID DURATION";
    return false;
  }
  lease.verb = verb == "list" ? LeaseVerb::List : verb == "end" ? LeaseVerb::End : LeaseVerb::Extend;
  if (wanted >= 1) lease.target = operands[0];
  if (!lease.target.empty() && !authority::valid_lease_name(lease.target)) {
    error = "'" + lease.target + "' is not a lease's name or id";
    return false;
  }
  if (wanted < 2) return true;
  const std::optional<uint64_t> ms = parse_duration_ms(operands[1]);
  if (!ms || *ms > authority::kMaxTtlMs) {
    error = "'lease extend' " + operands[1] + ": not a duration (examples: 250ms, 30s, 5m, 2h)";
    return false;
  }
  lease.extend_ms = *ms;
  return true;
}

// `slurm prolog|task-prolog|epilog [OPTIONS]`: no operands; Slurm's environment says the job.
bool parse_slurm(const std::vector<std::string> &arguments, size_t index, SlurmOptions &slurm, std::string &error) {
  const std::string stage = index < arguments.size() ? arguments[index++] : "";
  if (stage != "prolog" && stage != "task-prolog" && stage != "epilog") {
    error = stage.empty() ? "'slurm' needs the script it runs as: prolog, task-prolog or epilog"
                          : "unknown slurm script '" + stage + "': prolog, task-prolog or epilog";
    return false;
  }
  slurm.stage = stage == "prolog"   ? SlurmStage::Prolog
                : stage == "epilog" ? SlurmStage::Epilog
                                    : SlurmStage::TaskProlog;
  FlagTargets targets{.lease = &slurm.lease, .slurm = &slurm};
  std::vector<std::string> operands;
  if (!parse_flags(arguments, index, {"slurm " + stage, kSlurm, false, false}, targets, operands, error)) return false;
  if (!operands.empty()) {
    error = "'slurm " + stage + "' takes no operands: Slurm's environment names the job";
    return false;
  }
  return true;
}

bool is_help(const std::string &argument) { return argument == "--help" || argument == "-h"; }

// `leaseguard run --help` asks for the usage, as with every other tool; the same word after
// `--` (or, for run, once the command has begun) belongs to the command or is a path.
bool asks_for_help(const std::vector<std::string> &arguments, bool options_end_at_first_operand) {
  for (size_t index = 1; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    if (argument == "--") return false;
    if (is_help(argument)) return true;
    if (options_end_at_first_operand && argument.rfind("--", 0) != 0) return false;
  }
  return false;
}

}  // namespace

bool parse_command_line(const std::vector<std::string> &arguments, Command &command, std::string &error) {
  if (arguments.empty()) {
    error = "no command given";
    return false;
  }
  const std::string &first = arguments[0];
  const bool subcommand_help =
      (first == "run" && asks_for_help(arguments, true)) ||
      ((first == "report" || first == "diff" || first == "check") && asks_for_help(arguments, false));
  if (is_help(first) || first == "help" || subcommand_help) {
    command.subcommand = Subcommand::Help;
    return true;
  }
  if (first == "--version") {
    command.subcommand = Subcommand::Version;
    return true;
  }
  if (first == "run") {
    command.subcommand = Subcommand::Run;
    return parse_run(arguments, 1, command.run, error);
  }
  if (first == "daemon") {
    command.subcommand = Subcommand::Daemon;
    return parse_daemon(arguments, 1, command.daemon, error);
  }
  if (first == "lease") {
    command.subcommand = Subcommand::Lease;
    return parse_lease(arguments, 1, command.lease, error);
  }
  if (first == "slurm") {
    command.subcommand = Subcommand::Slurm;
    return parse_slurm(arguments, 1, command.slurm, error);
  }
  if (first == "top") {
    command.subcommand = Subcommand::Top;
    return parse_top(arguments, 1, command.top, error);
  }
  if (first == "check") {
    command.subcommand = Subcommand::Check;
    return parse_check(arguments, 1, command.check, error);
  }
  if (first == "report") {
    command.subcommand = Subcommand::Report;
    return parse_report(arguments, 1, command.report, error);
  }
  if (first == "diff") {
    command.subcommand = Subcommand::Diff;
    if (!parse_report(arguments, 1, command.report, error)) return false;
    if (command.report.paths.size() != 2) {
      error = "'diff' needs exactly two inputs: leaseguard diff BASELINE CURRENT";
      return false;
    }
    command.report.common.baseline = command.report.paths[0];
    command.report.paths.erase(command.report.paths.begin());
    return true;
  }
  error = "unknown command '" + first + "'";
  return false;
}

std::string usage_text() {
  return R"(leaseguard: find GPU device-memory leaks in CUDA programs

Usage:
  leaseguard run [OPTIONS] -- COMMAND [ARG...]
  leaseguard report [OPTIONS] PATH...     render journals (a directory is searched) and
                                          JSON reports, merged into one report
  leaseguard diff [OPTIONS] BASELINE CURRENT   the leak groups in CURRENT that BASELINE lacks
  leaseguard check [OPTIONS] PID          classify a running process's live allocations now
  leaseguard daemon [OPTIONS]             the node lease authority (docs/lease-authority.md)
  leaseguard lease start [OPTIONS] [run's options] -- COMMAND [ARG...]
  leaseguard lease list [--json] | end NAME|ID | extend NAME|ID DURATION   (each: --socket PATH)
  leaseguard top [OPTIONS]                leases, processes and live device memory
  leaseguard slurm prolog|task-prolog|epilog [OPTIONS]   a Slurm job under one lease
  leaseguard --help | --version          (also: leaseguard run|report|diff|check --help)

Options of run:
)" + help_text(help_entries(kRun)) +
         "\nSettings of the recorded process (run, lease start; each sets its LEASEGUARD_ variable):\n" +
         help_text(settings_entries()) + "\nFilters (run, report, diff, check):\n" + help_text(help_entries(kFilter)) +
         "\nOptions of report and diff:\n" + help_text(help_entries(kReport)) + "\nOptions of check:\n" +
         help_text(help_entries(kCheck)) + "\nOptions of lease start (and run's):\n" +
         help_text(help_entries(kLeaseStart)) + "\nOptions of lease list, end and extend:\n" +
         help_text(help_entries(kLeaseList | kLeaseOther)) + "\nOptions of daemon:\n" +
         help_text(help_entries(kDaemon)) + "\nOptions of top:\n" + help_text(help_entries(kTop)) +
         "\nOptions of slurm prolog, task-prolog and epilog:\n" + help_text(help_entries(kSlurm)) + R"(
A directory of runs (run's --out) is read by report and diff for its newest run. diff exits
23 when CURRENT has a leak group BASELINE lacks, 0 when it has none.

Exit status of run: COMMAND's status; 128+N if it died of signal N; 127 if COMMAND was not
found, 126 if it is not executable; CODE with --fail-on-leak when a leak remains; 2 for
leaseguard's own usage or I/O errors.
report exits 0, 23 (or CODE) with --fail-on-leak when a leak remains, 2 on unreadable
or damaged input (a damaged journal still yields a partial report).
slurm epilog exits 1 when a process of the job survived SIGKILL or the device still holds
its memory (Slurm then drains the node), 2 for leaseguard's own errors.
)";
}

}  // namespace leaseguard::cli
