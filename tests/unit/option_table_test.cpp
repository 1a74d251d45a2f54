// The table of settings (core/base/option_table.h): the parser, run's flags, run's help and
// the README's table all come from it, word for word (docs/usage.md's: CliFlags.*).
#include "option_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_options.h"

namespace leaseguard {
namespace {

std::string page(const std::string &relative) {
  std::ifstream file(std::string(LEASEGUARD_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The rows of a page's table whose first cell starts with `prefix` (as "| `PREFIX..."), each as
// (first cell without its backticks, second cell).
std::vector<std::pair<std::string, std::string>> table_rows(const std::string &text, const std::string &prefix) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `" + prefix, 0) != 0) continue;
    const size_t name_end = line.find("` | ");
    if (name_end == std::string::npos || line.size() < name_end + 6) continue;
    rows.emplace_back(line.substr(3, name_end - 3), line.substr(name_end + 4, line.size() - name_end - 6));
  }
  return rows;
}

std::vector<std::string> warnings_for(const char *variable, const char *value) {
  std::vector<std::string> warnings;
  parse_options([&](const char *name) { return std::string_view(name) == variable ? value : nullptr; }, warnings);
  return warnings;
}

TEST(OptionTable, EveryVariableIsReadAndABadValueSaysWhatIsUsedInstead) {
  for (const OptionRow &row : option_rows()) {
    SCOPED_TRACE(row.variable);
    const char *bad = row.variable == "LEASEGUARD_OUT" ? "" : "not valid!";
    const std::vector<std::string> warnings = warnings_for(row.variable.data(), bad);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0],
              std::string(row.variable) + "='" + bad + "' is not valid; using " + std::string(row.fallback));
  }
}

TEST(OptionTable, TheReadmeListsEveryVariableUsersSetAsTheTableSaysIt) {
  std::vector<std::pair<std::string, std::string>> expected;
  for (const OptionRow &row : option_rows())
    if (!row.set_by_leaseguard) expected.emplace_back(row.variable, row.help);
  EXPECT_EQ(table_rows(page("README.md"), "LEASEGUARD_"), expected);
}

TEST(OptionTable, RunsHelpListsEveryFlagWithItsValue) {
  const std::string help = cli::usage_text();
  for (const OptionRow &row : option_rows()) {
    if (row.flag.empty()) continue;
    EXPECT_NE(help.find("\n  " + std::string(row.flag) + " " + std::string(row.value) + " "), std::string::npos)
        << row.flag;
  }
}

TEST(OptionTable, RunChecksAFlagAsThePreloadReadsItsVariable) {
  for (const OptionRow &row : option_rows()) {
    if (row.flag.empty()) continue;
    SCOPED_TRACE(row.flag);
    cli::Command command;
    std::string error;
    EXPECT_FALSE(cli::parse_command_line({"run", std::string(row.flag), "not valid!", "--", "p"}, command, error));
    EXPECT_EQ(error, std::string(row.flag) + " not valid!: must be " + std::string(row.expect));
  }
}

}  // namespace
}  // namespace leaseguard
