// Every flag of the command line that is not a setting of the recorded process, written once:
// the flag, the commands that take it, the form of its value, its help, and what it sets.
// The settings (--ttl, --stack-depth, ...) have their own table, core/base/option_table.h,
// because the preload reads them too. From the two come the parser (cli_options.cpp),
// `--help`, and the option tables of docs/usage.md, which CliFlags.* hold to them word for word.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli_options.h"

namespace leaseguard::cli {

// The commands a flag belongs to, as a set.
enum CommandBit : unsigned {
  kRun = 1u << 0,
  kReport = 1u << 1,  // report and diff
  kFilter = 1u << 2,  // the filters of run, report and diff: their own table
  kLeaseStart = 1u << 3,
  kLeaseOther = 1u << 4,  // lease list, end, extend
  kLeaseList = 1u << 5,
  kDaemon = 1u << 6,
  kTop = 1u << 7,
  kCheck = 1u << 8,
  kSlurm = 1u << 9,  // slurm prolog, task-prolog, epilog
};

enum class ValueForm {
  None,         // a switch: --quiet
  Required,     // --out DIR or --out=DIR
  AfterEquals,  // --fail-on-leak or --fail-on-leak=CODE: a word after it is the command's
};

// What a flag may set: the options of the command being parsed. Those of other commands are null.
struct FlagTargets {
  CommonOptions *common = nullptr;
  RunOptions *run = nullptr;
  ReportOptions *report = nullptr;
  CheckOptions *check = nullptr;
  LeaseOptions *lease = nullptr;
  authority::DaemonOptions *daemon = nullptr;
  TopOptions *top = nullptr;
  SlurmOptions *slurm = nullptr;
};

struct FlagRow {
  std::string_view flag;   // --out
  std::string_view value;  // the value's form as help shows it: DIR; empty for a switch
  ValueForm form;
  unsigned commands;      // CommandBit set; a flag may have one row per meaning
  std::string_view help;  // one paragraph of Markdown, as docs/usage.md says it
  // Applies `value` (empty for a switch, or AfterEquals without one); false, with `error` set,
  // if it is not a value the flag takes.
  bool (*apply)(const std::string &value, FlagTargets &targets, std::string &error);
};

// In the order help lists them.
std::span<const FlagRow> flag_rows() noexcept;

// The row of `flag` that `command` (one CommandBit) takes, or nullptr.
const FlagRow *flag_for(std::string_view flag, unsigned command) noexcept;

// One help entry: the flag with its value's form, and its help.
struct HelpEntry {
  std::string name;  // "--out DIR", "--fail-on-leak[=CODE]"
  std::string help;  // Markdown
};

// The entries of `command`'s flags in help's order; kRun and kLeaseStart list the settings
// (option_table.h) only where `settings` says so, alone.
std::vector<HelpEntry> help_entries(unsigned command);
std::vector<HelpEntry> settings_entries();

// `entries` as --help prints them: the name in 25 columns, then the help as plain text,
// wrapped at 98.
std::string help_text(const std::vector<HelpEntry> &entries);

// `entries` as docs/usage.md's table rows: "| `--out DIR` | help |", one a line.
std::string markdown_rows(const std::vector<HelpEntry> &entries);

}  // namespace leaseguard::cli
