// Implementation of command-line parsing.
#include "cli_options.h"

#include "option_table.h"
#include "options.h"
#include "suppressions.h"

#include <algorithm>
#include <cstdint>

namespace leaseguard::cli {
namespace {

const char *const kFormats[] = {"text", "json", "sarif", "junit", "html", "folded"};
const char *const kAvailableFormats[] = {"text", "json", "sarif", "junit", "html", "folded"};

bool known(const char *const *list, size_t size, const std::string &name) {
  for (size_t i = 0; i < size; ++i)
    if (name == list[i]) return true;
  return false;
}

// Splits "--name=value" / "--name value" and fetches the value. `index` is advanced past
// a separate value.
bool take_value(const std::vector<std::string> &arguments, size_t &index, const std::string &name,
                std::optional<std::string> inline_value, std::string &value, std::string &error) {
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

// What an option shared by run and report does with its value; false, with `error` set, if
// the value is not one it takes.
using ValueOption = bool (*)(const std::string &value, CommonOptions &common, std::string &error);

bool parse_format(const std::string &value, CommonOptions &common, std::string &error) {
  FormatRequest request;
  const size_t equals = value.find('=');
  request.format = value.substr(0, equals);
  if (equals != std::string::npos) request.path = value.substr(equals + 1);
  if (!known(kFormats, std::size(kFormats), request.format)) {
    error = "unknown format '" + request.format + "' (text, json, sarif, junit, html, folded)";
    return false;
  }
  if (!known(kAvailableFormats, std::size(kAvailableFormats), request.format)) {
    error = "format '" + request.format + "' is not available in this version of leaseguard";
    return false;
  }
  if (equals != std::string::npos && request.path.empty()) {
    error = "--format " + request.format + "= needs a path after '='";
    return false;
  }
  common.formats.push_back(request);
  return true;
}

bool parse_min_bytes(const std::string &value, CommonOptions &common, std::string &error) {
  const auto bytes = report::parse_byte_size(value);
  if (!bytes) error = "--min-bytes " + value + ": must be a byte count, with an optional K, M or G suffix";
  else common.min_bytes = static_cast<uint64_t>(*bytes);
  return bytes.has_value();
}

bool parse_kind(const std::string &value, CommonOptions &common, std::string &error) {
  for (int i = 0; i < static_cast<int>(Kind::Count); ++i)
    if (kind_name(static_cast<Kind>(i)) == value) common.kind = static_cast<Kind>(i);
  if (!common.kind) {
    error = "--kind " + value + ": must be one of";
    for (int i = 0; i < static_cast<int>(Kind::Count); ++i)
      error += (i == 0                                   ? " "
                : i + 1 == static_cast<int>(Kind::Count) ? " or "
                                                         : ", ") +
               std::string(kind_name(static_cast<Kind>(i)));
  }
  return common.kind.has_value();
}

bool parse_max_groups(const std::string &value, CommonOptions &common, std::string &error) {
  const auto groups = parse_integer(value, 1, 1000000);
  if (!groups) error = "--max-groups " + value + ": must be a number from 1 to 1000000";
  else common.max_groups = static_cast<size_t>(*groups);
  return groups.has_value();
}

const std::pair<const char *, ValueOption> kValueOptions[] = {
    {"--out",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.out_dir = value;
       common.out_dir_given = true;
       return true;
     }},
    {"--format", parse_format},
    {"--suppressions",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.suppressions = value;
       return true;
     }},
    {"--min-bytes", parse_min_bytes},
    {"--lease",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.lease_pattern = value;
       return true;
     }},
    {"--api",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.api_pattern = value;
       return true;
     }},
    {"--kind", parse_kind},
    {"--max-groups", parse_max_groups},
    {"--baseline",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.baseline = value;
       return true;
     }},
    {"--source-root",
     [](const std::string &value, CommonOptions &common, std::string &) {
       common.source_root = value;
       return true;
     }},
};

// --fail-on-leak[=CODE]: a value only after '=' (a word after it is the command's).
bool parse_fail_on_leak(const std::optional<std::string> &inline_value, CommonOptions &common, std::string &error) {
  common.fail_on_leak = kDefaultLeakExitCode;
  if (!inline_value) return true;
  const auto code = parse_integer(*inline_value, 1, 255);
  if (!code) {
    error = "--fail-on-leak=" + *inline_value + ": the exit code must be a number from 1 to 255";
    return false;
  }
  common.fail_on_leak = static_cast<int>(*code);
  return true;
}

// Options shared by run and report. Returns true if `name` was one of them (`ok` then says
// whether it was given rightly).
bool parse_common(const std::vector<std::string> &arguments, size_t &index, const std::string &name,
                  const std::optional<std::string> &inline_value, CommonOptions &common, bool &ok, std::string &error) {
  if (name == "--fail-on-leak") {
    // `--fail-on-leak 5` would run (or read) "5": a number there was meant as the code.
    const std::string next = index + 1 < arguments.size() ? arguments[index + 1] : "";
    if (!inline_value && !next.empty() && next.size() <= 3 &&
        next.find_first_not_of("0123456789") == std::string::npos) {
      error = "--fail-on-leak takes its exit code after '=': --fail-on-leak=" + next;
      ok = false;
      return true;
    }
    ok = parse_fail_on_leak(inline_value, common, error);
    return true;
  }
  if (name == "--quiet" || name == "--gen-suppressions" || name == "--show-reachable") {
    if (inline_value) error = name + " takes no value";
    ok = !inline_value;
    (name == "--quiet"            ? common.quiet
     : name == "--show-reachable" ? common.show_reachable
                                  : common.gen_suppressions) = true;
    return true;
  }
  for (const auto &[option, apply] : kValueOptions) {
    if (name != option) continue;
    std::string value;
    ok = take_value(arguments, index, name, inline_value, value, error) && apply(value, common, error);
    return true;
  }
  return false;
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

// --keep N; false, with `error` set, if N is not a number of runs.
bool parse_keep(const std::string &value, RunOptions &run, std::string &error) {
  const auto keep = parse_integer(value, 1, 1000000);
  if (!keep) error = "--keep " + value + ": must be a number of runs from 1 up";
  else run.keep_runs = static_cast<size_t>(*keep);
  return keep.has_value();
}

// An option only run takes. Returns false, with `error` set, if it is unknown or given wrongly.
bool parse_run_only(const std::vector<std::string> &arguments, size_t &index, const std::string &name,
                    const std::optional<std::string> &inline_value, RunOptions &run, std::string &error) {
  if (name == "--sim") {
    if (inline_value) {
      error = "--sim takes no value";
      return false;
    }
    run.sim = true;
    return true;
  }
  if (const OptionRow *row = option_with_flag(name)) {
    std::string value;
    return take_value(arguments, index, name, inline_value, value, error) && parse_setting(*row, value, run, error);
  }
  if (name == "--keep") {
    std::string value;
    return take_value(arguments, index, name, inline_value, value, error) && parse_keep(value, run, error);
  }
  error = "unknown option " + name + " for 'run'";
  return false;
}

bool parse_run(const std::vector<std::string> &arguments, size_t index, RunOptions &run, std::string &error) {
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    if (argument == "--") {
      run.command.assign(arguments.begin() + static_cast<long>(index) + 1, arguments.end());
      break;
    }
    if (argument.rfind("--", 0) != 0) {
      run.command.assign(arguments.begin() + static_cast<long>(index), arguments.end());
      break;
    }
    size_t equals = argument.find('=');
    std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    bool ok = true;
    if (parse_common(arguments, index, name, inline_value, run.common, ok, error)) {
      if (!ok) return false;
      continue;
    }
    if (!parse_run_only(arguments, index, name, inline_value, run, error)) return false;
  }
  if (run.command.empty()) {
    error = "'run' needs a command: leaseguard run [OPTIONS] -- COMMAND [ARG...]";
    return false;
  }
  return true;
}

bool parse_report(const std::vector<std::string> &arguments, size_t index, ReportOptions &report, std::string &error) {
  bool options_done = false;
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    if (!options_done && argument == "--") {
      options_done = true;
      continue;
    }
    if (options_done || argument.rfind("--", 0) != 0) {
      report.paths.push_back(argument);
      continue;
    }
    size_t equals = argument.find('=');
    std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    bool ok = true;
    if (parse_common(arguments, index, name, inline_value, report.common, ok, error)) {
      if (!ok) return false;
      continue;
    }
    if (name == "--all-runs" && !inline_value) {
      report.all_runs = true;
      continue;
    }
    error = "unknown option " + name + " for 'report'";
    return false;
  }
  if (report.paths.empty()) {
    error = "'report' needs at least one journal or directory";
    return false;
  }
  return true;
}

// `daemon [--socket PATH] [--state DIR] [--metrics HOST:PORT] [--textfile PATH]`.
bool parse_daemon(const std::vector<std::string> &arguments, size_t index, authority::DaemonOptions &daemon,
                  std::string &error) {
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    const size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    std::string *target = name == "--socket"     ? &daemon.socket
                          : name == "--state"    ? &daemon.state_directory
                          : name == "--metrics"  ? &daemon.metrics_address
                          : name == "--textfile" ? &daemon.textfile
                                                 : nullptr;
    if (target == nullptr) {
      error = "unknown option " + argument + " for 'daemon'";
      return false;
    }
    if (!take_value(arguments, index, name, inline_value, *target, error)) return false;
  }
  return true;
}

// A duration that must be given and well-formed; `what` names it in the error.
bool duration_value(const std::string &value, const std::string &what, uint64_t max_ms, uint64_t &ms,
                    std::string &error) {
  const std::optional<uint64_t> parsed = parse_duration_ms(value);
  if (!parsed || *parsed > max_ms) {
    error = what + " " + value + ": not a duration (examples: 250ms, 30s, 5m, 2h)";
    return false;
  }
  ms = *parsed;
  return true;
}

// Whether run's option `name` takes its value as the next argument (when not given with =).
bool run_option_takes_value(const std::string &name) {
  for (const auto &[option, apply] : kValueOptions)
    if (name == option) return true;
  for (const char *option : {"--stack-depth", "--journal", "--reachability", "--device-scan", "--keep"})
    if (name == option) return true;
  return false;
}

// `lease start`: its own options (--socket, --name, --ttl, --on-expiry, --grace) anywhere
// before the command, where they mean the lease's; the rest are run's.
bool parse_lease_start(const std::vector<std::string> &arguments, size_t index, LeaseOptions &lease,
                       std::string &error) {
  std::vector<std::string> run_arguments;
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    if (argument == "--" || argument.rfind("--", 0) != 0) break;
    const size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    if (name != "--socket" && name != "--name" && name != "--ttl" && name != "--on-expiry" && name != "--grace") {
      run_arguments.push_back(argument);
      if (!inline_value && run_option_takes_value(name) && index + 1 < arguments.size())
        run_arguments.push_back(arguments[++index]);
      continue;
    }
    std::string value;
    if (!take_value(arguments, index, name, inline_value, value, error)) return false;
    if (name == "--socket") {
      lease.socket = value;
    } else if (name == "--name") {
      if (!authority::valid_lease_name(value)) {
        error = "--name " + value + ": letters, digits and . _ - @ : + only, at most " +
                std::to_string(authority::kMaxNameBytes) + " bytes";
        return false;
      }
      lease.name = value;
    } else if (name == "--ttl") {
      if (!duration_value(value, "--ttl", authority::kMaxTtlMs, lease.ttl_ms, error)) return false;
    } else if (name == "--grace") {
      if (!duration_value(value, "--grace", authority::kMaxGraceMs, lease.grace_ms, error)) return false;
    } else {
      const std::optional<authority::Teardown> teardown = authority::teardown_from_name(value);
      if (!teardown) {
        error = "--on-expiry " + value + ": must be report, reclaim or terminate";
        return false;
      }
      lease.teardown = *teardown;
    }
  }
  run_arguments.insert(run_arguments.end(), arguments.begin() + static_cast<long>(index), arguments.end());
  if (!parse_run(run_arguments, 0, lease.run, error)) {
    if (error.rfind("'run' needs a command", 0) == 0)
      error = "'lease start' needs a command: leaseguard lease start [OPTIONS] -- COMMAND [ARG...]";
    else if (const size_t at = error.find(" for 'run'"); at != std::string::npos)
      error.replace(at, 10, " for 'lease start'");
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
  std::vector<std::string> operands;
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    const size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    if (name == "--socket") {
      if (!take_value(arguments, index, name, inline_value, lease.socket, error)) return false;
    } else if (argument == "--json" && verb == "list") {
      lease.json = true;
    } else if (argument.rfind("--", 0) == 0) {
      error = "unknown option " + argument + " for 'lease " + verb + "'";
      return false;
    } else {
      operands.push_back(argument);
    }
  }
  const size_t wanted = verb == "list" ? 0 : verb == "end" ? 1 : verb == "extend" ? 2 : SIZE_MAX;
  if (wanted == SIZE_MAX) {
    error = "unknown lease command '" + verb + "': start, list, end or extend";
    return false;
  }
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
  return wanted < 2 || duration_value(operands[1], "'lease extend'", authority::kMaxTtlMs, lease.extend_ms, error);
}

// `top [--once] [--socket PATH] [--out DIR]`.
bool parse_top(const std::vector<std::string> &arguments, size_t index, TopOptions &top, std::string &error) {
  for (; index < arguments.size(); ++index) {
    const std::string &argument = arguments[index];
    const size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    std::optional<std::string> inline_value;
    if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
    if (argument == "--once") {
      top.once = true;
    } else if (name == "--socket" || name == "--out") {
      if (!take_value(arguments, index, name, inline_value, name == "--socket" ? top.socket : top.out_dir, error))
        return false;
    } else {
      error = "unknown option " + argument + " for 'top'";
      return false;
    }
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
  const bool subcommand_help = (first == "run" && asks_for_help(arguments, true)) ||
                               ((first == "report" || first == "diff") && asks_for_help(arguments, false));
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
  if (first == "top") {
    command.subcommand = Subcommand::Top;
    return parse_top(arguments, 1, command.top, error);
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

// run's flags of the table of settings (core/base/option_table.h) as --help lists them: the
// flag and its value's form in 25 columns, then its help without the `code` marks, wrapped.
std::string settings_help() {
  constexpr size_t kHelpColumn = 25, kWidth = 98;
  std::string text;
  for (const OptionRow &row : option_rows()) {
    if (row.flag.empty()) continue;
    std::string line = "  " + std::string(row.flag) + " " + std::string(row.value);
    line.resize(std::max(line.size() + 1, kHelpColumn), ' ');
    bool first_word = true;
    std::string word;
    auto place = [&] {
      if (word.empty()) return;
      if (!first_word && line.size() + 1 + word.size() > kWidth) {
        text += line + "\n";
        line = std::string(kHelpColumn, ' ');
      } else if (!first_word) {
        line += ' ';
      }
      line += word;
      word.clear();
      first_word = false;
    };
    for (char c : row.help) {
      if (c == ' ') place();
      else if (c != '`') word += c;
    }
    place();
    text += line + "\n";
  }
  return text;
}

std::string usage_text() {
  return R"(leaseguard: find GPU device-memory leaks in CUDA programs

Usage:
  leaseguard run [OPTIONS] -- COMMAND [ARG...]
  leaseguard report [OPTIONS] PATH...     render journals (a directory is searched) and
                                          JSON reports, merged into one report
  leaseguard diff [OPTIONS] BASELINE CURRENT   the leak groups in CURRENT that BASELINE lacks
  leaseguard daemon [--socket PATH] [--state DIR] [--metrics HOST:PORT] [--textfile PATH]
                                          the node lease authority (docs/lease-authority.md)
  leaseguard lease start [--name NAME] [--ttl DURATION] [--on-expiry report|reclaim|terminate]
                         [--grace DURATION] [run's options] -- COMMAND [ARG...]
  leaseguard lease list [--json] | end NAME|ID | extend NAME|ID DURATION   (each: --socket PATH)
  leaseguard top [--once] [--socket PATH] [--out DIR]   leases, processes and live device memory
  leaseguard --help | --version          (also: leaseguard run|report|diff --help)

Options of run:
  --sim                  run COMMAND against the bundled simulated GPU
  --out DIR              where reports go (default ./leaseguard-out); each run's journals go
                         into a directory of its own there, DIR/latest names the newest
  --keep N               keep the newest N runs in DIR, removing older ones
)" + settings_help() +
         R"(  --show-reachable       list reachable allocations too (run, report, diff)
  --format FMT[=PATH]    text | json | sarif | junit | html | folded; repeatable; without =PATH
                         a file in DIR
  --source-root DIR      SARIF file locations are relative to DIR (default: the current
                         directory)
  --suppressions FILE    leak suppressions: LeakSanitizer's leak:PATTERN lines, plus
                         api=PATTERN and min_bytes=SIZE qualifiers (docs/suppressions.md)
  --gen-suppressions     print a ready suppression line under each leak group
  --fail-on-leak[=CODE]  exit with CODE (default 23) when an unsuppressed leak remains
  --quiet                nothing on stderr but leaseguard's own errors

Filters (run, report, diff):
  --min-bytes N  --lease NAME  --api NAME  --kind KIND   (NAME may use * wildcards)
  --max-groups N         show at most N leak groups per lease in the text ("omitting K more")
  --baseline PATH        leave out leak groups that PATH (journals or a JSON report) has too;
                         groups match by entry point and symbolized frames, never addresses

Options of report and diff: --out, --format, --source-root, --suppressions,
--gen-suppressions, --show-reachable, --fail-on-leak, --quiet, as above. A directory of runs (run's --out)
is read for its newest run; --all-runs (report) reads every run in it. diff exits 23 when
CURRENT has a leak group BASELINE lacks, 0 when it has none.

Exit status of run: COMMAND's status; 128+N if it died of signal N; 127 if COMMAND was not
found, 126 if it is not executable; CODE with --fail-on-leak when a leak remains; 2 for
leaseguard's own usage or I/O errors.
report exits 0, 23 (or CODE) with --fail-on-leak when a leak remains, 2 on unreadable
or damaged input (a damaged journal still yields a partial report).
)";
}

}  // namespace leaseguard::cli
