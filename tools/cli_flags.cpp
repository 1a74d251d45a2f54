// The table of the command line's own flags (cli_flags.h), what each applies, and how help
// and the pages show them.
#include "cli_flags.h"

#include <algorithm>

#include "option_table.h"
#include "options.h"
#include "suppressions.h"

namespace leaseguard::cli {
namespace {

constexpr std::string_view kFormats[] = {"text", "json", "sarif", "junit", "html", "folded"};

bool set_out(const std::string &value, FlagTargets &targets, std::string &) {
  targets.common->out_dir = value;
  targets.common->out_dir_given = true;
  return true;
}

bool add_format(const std::string &value, FlagTargets &targets, std::string &error) {
  FormatRequest request;
  const size_t equals = value.find('=');
  request.format = value.substr(0, equals);
  if (equals != std::string::npos) request.path = value.substr(equals + 1);
  if (std::find(std::begin(kFormats), std::end(kFormats), request.format) == std::end(kFormats)) {
    error = "unknown format '" + request.format + "' (text, json, sarif, junit, html, folded)";
    return false;
  }
  if (equals != std::string::npos && request.path.empty()) {
    error = "--format " + request.format + "= needs a path after '='";
    return false;
  }
  targets.common->formats.push_back(request);
  return true;
}

bool set_fail_on_leak(const std::string &value, FlagTargets &targets, std::string &error) {
  targets.common->fail_on_leak = kDefaultLeakExitCode;
  if (value.empty()) return true;
  const auto code = parse_integer(value, 1, 255);
  if (!code) error = "--fail-on-leak=" + value + ": the exit code must be a number from 1 to 255";
  else targets.common->fail_on_leak = static_cast<int>(*code);
  return code.has_value();
}

bool set_min_bytes(const std::string &value, FlagTargets &targets, std::string &error) {
  const auto bytes = report::parse_byte_size(value);
  if (!bytes) error = "--min-bytes " + value + ": must be a byte count, with an optional K, M or G suffix";
  else targets.common->min_bytes = static_cast<uint64_t>(*bytes);
  return bytes.has_value();
}

bool set_kind(const std::string &value, FlagTargets &targets, std::string &error) {
  constexpr int kKinds = static_cast<int>(Kind::Count);
  for (int i = 0; i < kKinds; ++i)
    if (kind_name(static_cast<Kind>(i)) == value) targets.common->kind = static_cast<Kind>(i);
  if (targets.common->kind) return true;
  error = "--kind " + value + ": must be one of";
  for (int i = 0; i < kKinds; ++i)
    error += std::string(i == 0 ? " " : i + 1 == kKinds ? " or " : ", ") + std::string(kind_name(static_cast<Kind>(i)));
  return false;
}

bool set_max_groups(const std::string &value, FlagTargets &targets, std::string &error) {
  const auto groups = parse_integer(value, 1, 1000000);
  if (!groups) error = "--max-groups " + value + ": must be a number from 1 to 1000000";
  else targets.common->max_groups = static_cast<size_t>(*groups);
  return groups.has_value();
}

bool set_keep(const std::string &value, FlagTargets &targets, std::string &error) {
  const auto keep = parse_integer(value, 1, 1000000);
  if (!keep) error = "--keep " + value + ": must be a number of runs from 1 up";
  else targets.run->keep_runs = static_cast<size_t>(*keep);
  return keep.has_value();
}

// A duration that must be well-formed and at most `max_ms`; `flag` names it in the error.
bool duration(const std::string &value, std::string_view flag, uint64_t max_ms, uint64_t &ms, std::string &error) {
  const std::optional<uint64_t> parsed = parse_duration_ms(value);
  if (!parsed || *parsed > max_ms) {
    error = std::string(flag) + " " + value + ": not a duration (examples: 250ms, 30s, 5m, 2h)";
    return false;
  }
  ms = *parsed;
  return true;
}

bool set_lease_name(const std::string &value, FlagTargets &targets, std::string &error) {
  if (!authority::valid_lease_name(value)) {
    error = "--name " + value + ": letters, digits and . _ - @ : + only, at most " +
            std::to_string(authority::kMaxNameBytes) + " bytes";
    return false;
  }
  targets.lease->name = value;
  return true;
}

bool set_lease_teardown(const std::string &value, FlagTargets &targets, std::string &error) {
  const std::optional<authority::Teardown> teardown = authority::teardown_from_name(value);
  if (!teardown) error = "--on-expiry " + value + ": must be report, reclaim or terminate";
  else targets.lease->teardown = *teardown;
  return teardown.has_value();
}

// A flag that keeps its value as given, in the string `member` of the options it belongs to.
template <auto Target, auto Member>
bool keep_text(const std::string &value, FlagTargets &targets, std::string &) {
  (targets.*Target)->*Member = value;
  return true;
}

// A switch that sets the bool `member`.
template <auto Target, auto Member>
bool switch_on(const std::string &, FlagTargets &targets, std::string &) {
  (targets.*Target)->*Member = true;
  return true;
}

constexpr unsigned kLease = kLeaseStart | kLeaseOther | kLeaseList;

using V = ValueForm;
using T = FlagTargets;

const FlagRow kRows[] = {
    {"--sim", "", V::None, kRun, "run against the bundled simulated GPU (no GPU or driver needed)",
     [](const std::string &, FlagTargets &targets, std::string &) { return targets.run->sim = true; }},
    {"--out", "DIR", V::Required, kRun,
     "where reports go, and each run's journals in a directory of its own (default `./leaseguard-out`; created "
     "with mode 0700 if missing; see \"Runs\" below). It must be this user's and writable by no one else: another "
     "user's directory, one open to all (`/tmp` itself), or a path through a symbolic link someone else owns is "
     "refused (exit 2)",
     set_out},
    {"--out", "DIR", V::Required, kReport | kCheck,
     "where `--format` files without a path go, made if missing, before the work (default `.`)", set_out},
    {"--all-runs", "", V::None, kReport, "a directory of runs: every run, not only the newest",
     switch_on<&T::report, &ReportOptions::all_runs>},
    {"--keep", "N", V::Required, kRun,
     "after the run, remove all but the newest N runs in DIR (their journals and exit files); a run still "
     "going (another `run` into DIR) is left",
     set_keep},
    {"--format", "FMT[=PATH]", V::Required, kRun | kReport | kCheck,
     "`text`, `json`, `sarif`, `junit`, `html` or `folded` ([report-format.md](report-format.md)); repeatable. "
     "Without `=PATH` the file is `DIR/leaseguard-report.txt`, `.json`, `.sarif`, `.junit.xml`, `.html` or "
     "`.folded`",
     add_format},
    {"--source-root", "DIR", V::Required, kRun | kReport | kCheck,
     "SARIF file locations are relative to DIR (default: the current directory)",
     keep_text<&T::common, &CommonOptions::source_root>},
    {"--suppressions", "FILE", V::Required, kRun | kReport | kCheck,
     "leak suppressions ([suppressions.md](suppressions.md)); a malformed file is a usage error",
     keep_text<&T::common, &CommonOptions::suppressions>},
    {"--gen-suppressions", "", V::None, kRun | kReport | kCheck, "print a ready suppression line under each leak group",
     switch_on<&T::common, &CommonOptions::gen_suppressions>},
    {"--show-reachable", "", V::None, kRun | kReport | kCheck, "list reachable allocations as `Reachable:` groups too",
     switch_on<&T::common, &CommonOptions::show_reachable>},
    {"--fail-on-leak", "[=CODE]", V::AfterEquals, kRun | kReport | kCheck,
     "exit with CODE (1 to 255, default 23) when an unsuppressed leak remains", set_fail_on_leak},
    {"--quiet", "", V::None, kRun | kReport | kCheck, "nothing on stderr but leaseguard's own errors",
     switch_on<&T::common, &CommonOptions::quiet>},

    {"--min-bytes", "N", V::Required, kFilter,
     "only leaks of at least N bytes (a byte count, or with a `K`, `M` or `G` suffix, as `min_bytes=` in "
     "suppression files)",
     set_min_bytes},
    {"--lease", "NAME", V::Required, kFilter, "only leaks of the leases so named (`*` matches any run of characters)",
     keep_text<&T::common, &CommonOptions::lease_pattern>},
    {"--api", "NAME", V::Required, kFilter, "only leaks allocated through the entry points so named (`*` as above)",
     keep_text<&T::common, &CommonOptions::api_pattern>},
    {"--kind", "KIND", V::Required, kFilter,
     "only leaks of this kind: `device`, `pitched`, `managed`, `async`, `host`, `vmm`, `array`, `pool`, "
     "`ipc`, `registered` or `external`",
     set_kind},
    {"--max-groups", "N", V::Required, kFilter,
     "show at most N leak groups per lease in the text report, and say how many were left out", set_max_groups},
    {"--baseline", "PATH", V::Required, kFilter,
     "leave out the leak groups that PATH (journals, a run or a JSON report) has too; groups match by entry point "
     "and symbolized frames, never addresses",
     keep_text<&T::common, &CommonOptions::baseline>},

    {"--timeout", "DURATION", V::Required, kCheck,
     "how long to wait for the process to answer (default `60s`); past it, exit 2 and the process checks "
     "when it can",
     [](const std::string &value, FlagTargets &targets, std::string &error) {
       return duration(value, "--timeout", uint64_t{24} * 3600 * 1000, targets.check->timeout_ms, error);
     }},

    {"--name", "NAME", V::Required, kLeaseStart, "the lease's name (default: its id); letters, digits and `._-@:+`",
     set_lease_name},
    {"--ttl", "DURATION", V::Required, kLeaseStart,
     "the lease's time-to-live (`30s`, `5m`, `2h`); without it the lease lasts while its command runs",
     [](const std::string &value, FlagTargets &targets, std::string &error) {
       return duration(value, "--ttl", authority::kMaxTtlMs, targets.lease->ttl_ms, error);
     }},
    {"--on-expiry", "POLICY", V::Required, kSlurm,
     "what the end of a job's lease does: `terminate` (default), `reclaim` or `report`", set_lease_teardown},
    {"--on-expiry", "POLICY", V::Required, kLeaseStart,
     "what the lease's end does: `report` (default), `reclaim` or `terminate` "
     "([lease-authority.md](lease-authority.md))",
     set_lease_teardown},
    {"--grace", "DURATION", V::Required, kLeaseStart | kSlurm,
     "how long `reclaim` waits for answers and `terminate` waits between SIGTERM and SIGKILL (default 10s)",
     [](const std::string &value, FlagTargets &targets, std::string &error) {
       return duration(value, "--grace", authority::kMaxGraceMs, targets.lease->grace_ms, error);
     }},
    {"--socket", "PATH", V::Required, kLease | kTop | kSlurm,
     "the daemon's socket (default: `LEASEGUARD_SOCKET`, else `$XDG_RUNTIME_DIR/leaseguard.sock`, else "
     "`/run/leaseguard/leaseguard.sock`)",
     [](const std::string &value, FlagTargets &targets, std::string &) {
       (targets.lease != nullptr ? targets.lease->socket : targets.top->socket) = value;
       return true;
     }},
    {"--json", "", V::None, kLeaseList, "the leases as one JSON array", switch_on<&T::lease, &LeaseOptions::json>},

    {"--socket", "PATH", V::Required, kDaemon, "the socket to listen on (default as for `lease`)",
     keep_text<&T::daemon, &authority::DaemonOptions::socket>},
    {"--all-users", "", V::None, kDaemon,
     "root's socket is open to every local user (`0666`), not only to group `leaseguard`: a batch node, where each "
     "job's processes register with the lease its prolog began (each user still acts only on their own leases)",
     switch_on<&T::daemon, &authority::DaemonOptions::all_users>},
    {"--state", "DIR", V::Required, kDaemon,
     "where leases are kept across restarts (default `$XDG_STATE_HOME/leaseguard`, else "
     "`~/.local/state/leaseguard`; `/var/lib/leaseguard` for root)",
     keep_text<&T::daemon, &authority::DaemonOptions::state_directory>},
    {"--metrics", "HOST:PORT", V::Required, kDaemon, "serve Prometheus's text format at `/metrics`",
     keep_text<&T::daemon, &authority::DaemonOptions::metrics_address>},
    {"--textfile", "PATH", V::Required, kDaemon,
     "write the same metrics to PATH, replaced whole, for node_exporter's textfile collector",
     keep_text<&T::daemon, &authority::DaemonOptions::textfile>},

    {"--out", "DIR", V::Required, kSlurm,
     "where each job's directory is made, `DIR/JOBID`: its journals, and the report the epilog writes (default "
     "`/var/lib/leaseguard/slurm`; root's, writable by no one else)",
     keep_text<&T::slurm, &SlurmOptions::jobs_dir>},
    {"--sim", "", V::None, kSlurm, "the job's processes use the bundled simulated GPU (task-prolog; for trying it out)",
     switch_on<&T::slurm, &SlurmOptions::sim>},

    {"--once", "", V::None, kTop, "print one snapshot and exit, for scripts", switch_on<&T::top, &TopOptions::once>},
    {"--out", "DIR", V::Required, kTop, "where to find runs' journals when no daemon answers (default as for `run`)",
     keep_text<&T::top, &TopOptions::out_dir>},
};

// Markdown as a terminal shows it: no `code` marks, a [link](target) as its text.
std::string plain(std::string_view markdown) {
  std::string text;
  for (size_t i = 0; i < markdown.size(); ++i) {
    const char c = markdown[i];
    if (c == '`') continue;
    if (c == ']' && i + 1 < markdown.size() && markdown[i + 1] == '(') {
      i = markdown.find(')', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    if (c == '[' && markdown.find("](", i) != std::string_view::npos) continue;
    text += c;
  }
  return text;
}

}  // namespace

std::span<const FlagRow> flag_rows() noexcept { return kRows; }

const FlagRow *flag_for(std::string_view flag, unsigned commands) noexcept {
  for (const FlagRow &row : kRows)
    if (row.flag == flag && (row.commands & commands) != 0) return &row;
  return nullptr;
}

std::vector<HelpEntry> help_entries(unsigned command) {
  std::vector<HelpEntry> entries;
  for (const FlagRow &row : kRows) {
    if ((row.commands & command) == 0) continue;
    const bool attached = row.form == ValueForm::AfterEquals || row.value.empty();
    entries.push_back({std::string(row.flag) + (attached ? "" : " ") + std::string(row.value), std::string(row.help)});
  }
  return entries;
}

std::vector<HelpEntry> settings_entries() {
  std::vector<HelpEntry> entries;
  for (const OptionRow &row : option_rows())
    if (!row.flag.empty())
      entries.push_back({std::string(row.flag) + " " + std::string(row.value), std::string(row.help)});
  return entries;
}

std::string help_text(const std::vector<HelpEntry> &entries) {
  constexpr size_t kHelpColumn = 25, kWidth = 98;
  std::string text;
  for (const HelpEntry &entry : entries) {
    std::string line = "  " + entry.name;
    line.resize(std::max(line.size() + 1, kHelpColumn), ' ');
    bool line_empty = true;  // no word on it yet
    const std::string words = plain(entry.help);
    for (size_t start = 0; start < words.size();) {
      size_t end = words.find(' ', start);
      if (end == std::string::npos) end = words.size();
      const std::string_view word(words.data() + start, end - start);
      if (!line_empty && line.size() + 1 + word.size() > kWidth) {
        text += line + "\n";
        line = std::string(kHelpColumn, ' ');
      } else if (!line_empty) {
        line += ' ';
      }
      line += word;
      line_empty = false;
      start = end + 1;
    }
    text += line + "\n";
  }
  return text;
}

std::string markdown_rows(const std::vector<HelpEntry> &entries) {
  std::string rows;
  for (const HelpEntry &entry : entries) rows += "| `" + entry.name + "` | " + entry.help + " |\n";
  return rows;
}

}  // namespace leaseguard::cli
