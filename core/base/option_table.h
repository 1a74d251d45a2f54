// Every setting of a recorded process, written once, as entry_points.h writes every entry
// point: the environment variable the preload reads, the `leaseguard run` flag that sets it
// (none for some), the form of its value, what a bad value must look like and falls back to,
// and its help. From it come the preload's parser (options.cpp), run's flags, what run passes
// on and `run --help` (tools/cli_options.cpp, tools/cli_flags.cpp), and the tables of the
// README and docs/usage.md, which OptionTable.* and CliFlags.* hold to it word for word.
#pragma once

#include <span>
#include <string_view>

#include "options.h"

namespace leaseguard {

struct OptionRow {
  std::string_view variable;  // LEASEGUARD_...
  std::string_view flag;      // run's flag; empty where run has none
  std::string_view value;     // the value's form, as help shows it: DURATION, N, MODE
  std::string_view expect;    // what a value must be, for run's usage error
  std::string_view fallback;  // what a bad value in the environment is replaced with
  std::string_view help;      // one paragraph, as the README and docs/usage.md say it
  // Set by leaseguard itself for the processes it starts (run, lease start): not in the
  // README's table of what users set.
  bool set_by_leaseguard;
  // Applies a valid `text`; false, with `options` unchanged, if it is not valid.
  bool (*apply)(std::string_view text, Options &options);
};

// In the order the parser reads them and help lists them.
std::span<const OptionRow> option_rows() noexcept;

// The row whose run flag is `flag`, or nullptr.
const OptionRow *option_with_flag(std::string_view flag) noexcept;

}  // namespace leaseguard
