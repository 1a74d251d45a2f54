// The table of the command line's flags (tools/cli_flags.h): every flag is taken by the commands
// its row names and by no other, --help lists each, and docs/usage.md's option tables are the
// table's rows word for word. LEASEGUARD_UPDATE_GOLDEN=1 rewrites those tables from the table.
#include "cli_flags.h"
#include "option_table.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace leaseguard::cli {
namespace {

const std::string kUsagePage = std::string(LEASEGUARD_SOURCE_DIR) + "/docs/usage.md";

std::string read_page() {
  std::ifstream file(kUsagePage);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// docs/usage.md's tables, each named by its header row, and the entries each must list.
const std::vector<std::pair<std::string, std::vector<HelpEntry>>> &page_tables() {
  static const std::vector<std::pair<std::string, std::vector<HelpEntry>>> tables = {
      {"| option of run | meaning |", help_entries(kRun)},
      {"| setting | meaning |", settings_entries()},
      {"| option of report and diff | meaning |", help_entries(kReport)},
      {"| filter | meaning |", help_entries(kFilter)},
      {"| option of check | meaning |", help_entries(kCheck)},
      {"| option of lease start | meaning |", help_entries(kLeaseStart)},
      {"| option of lease list, end and extend | meaning |", help_entries(kLeaseList | kLeaseOther)},
      {"| option of daemon | meaning |", help_entries(kDaemon)},
      {"| option of top | meaning |", help_entries(kTop)},
      {"| option of slurm prolog, task-prolog and epilog | meaning |", help_entries(kSlurm)},
  };
  return tables;
}

// Where the rows of the table under `header` begin and end in `page`; npos if it has none.
std::pair<size_t, size_t> rows_of(const std::string &page, const std::string &header) {
  size_t begin = page.find("\n" + header + "\n|---|---|\n");
  if (begin == std::string::npos) return {begin, begin};
  begin = page.find("|---|---|\n", begin) + 10;
  size_t end = begin;
  while (end < page.size() && page[end] == '|') end = page.find('\n', end) + 1;
  return {begin, end};
}

TEST(CliFlags, TheUsagePageListsEveryTableAsTheTablesSayIt) {
  std::string page = read_page();
  ASSERT_FALSE(page.empty()) << kUsagePage;
  for (const auto &[header, entries] : page_tables()) {
    SCOPED_TRACE(header);
    const auto [begin, end] = rows_of(page, header);
    ASSERT_NE(begin, std::string::npos) << "docs/usage.md has no table headed " << header;
    const std::string expected = markdown_rows(entries);
    if (std::getenv("LEASEGUARD_UPDATE_GOLDEN") != nullptr) page.replace(begin, end - begin, expected);
    else EXPECT_EQ(page.substr(begin, end - begin), expected);
  }
  if (std::getenv("LEASEGUARD_UPDATE_GOLDEN") != nullptr) std::ofstream(kUsagePage) << page;
}

TEST(CliFlags, HelpListsEveryFlagOfEveryCommandWithItsValue) {
  const std::string help = usage_text();
  for (const unsigned command :
       {kRun, kReport, kFilter, kCheck, kLeaseStart, kLeaseList, kLeaseOther, kDaemon, kTop, kSlurm})
    for (const HelpEntry &entry : help_entries(command))
      EXPECT_NE(help.find("\n  " + entry.name + " "), std::string::npos) << entry.name;
  for (const HelpEntry &entry : settings_entries())
    EXPECT_NE(help.find("\n  " + entry.name + " "), std::string::npos) << entry.name;
}

// A command line of the command `bit` with `flag` (and, where it takes one, its value) in it.
std::vector<std::string> command_line(unsigned bit, const std::vector<std::string> &flag) {
  const std::map<unsigned, std::pair<std::vector<std::string>, std::vector<std::string>>> shapes = {
      {kRun, {{"run"}, {"--", "p"}}},        {kReport, {{"report"}, {"x"}}},
      {kCheck, {{"check"}, {"4242"}}},       {kLeaseStart, {{"lease", "start"}, {"--", "p"}}},
      {kLeaseList, {{"lease", "list"}, {}}}, {kLeaseOther, {{"lease", "end", "job"}, {}}},
      {kDaemon, {{"daemon"}, {}}},           {kTop, {{"top"}, {}}},
      {kSlurm, {{"slurm", "epilog"}, {}}},
  };
  auto [line, tail] = shapes.at(bit);
  line.insert(line.end(), flag.begin(), flag.end());
  line.insert(line.end(), tail.begin(), tail.end());
  return line;
}

// A value each form of value takes.
std::vector<std::string> flag_with_value(const FlagRow &row) {
  const std::map<std::string_view, std::string> values = {
      {"DIR", "d"},       {"N", "3"},    {"FMT[=PATH]", "json"}, {"FILE", "f"},         {"NAME", "job"},
      {"KIND", "device"}, {"PATH", "p"}, {"DURATION", "5s"},     {"POLICY", "reclaim"}, {"HOST:PORT", "127.0.0.1:0"},
  };
  if (row.form != ValueForm::Required) return {std::string(row.flag)};
  return {std::string(row.flag), values.at(row.value)};
}

// Each command a flag's rows name takes it; each they do not refuses it, in one line naming it.
TEST(CliFlags, EveryFlagIsTakenByTheCommandsItsRowsNameAndNoOther) {
  // run's flags, settings and filters are lease start's too
  const unsigned filtered = kRun | kReport | kCheck | kLeaseStart;
  for (const FlagRow &row : flag_rows()) {
    for (const unsigned bit : {kRun, kReport, kCheck, kLeaseStart, kLeaseList, kLeaseOther, kDaemon, kTop, kSlurm}) {
      const bool takes = flag_for(row.flag, bit) != nullptr ||
                         (bit == kLeaseStart && flag_for(row.flag, kRun) != nullptr) ||
                         ((bit & filtered) != 0 && flag_for(row.flag, kFilter) != nullptr) ||
                         ((bit & (kRun | kLeaseStart)) != 0 && option_with_flag(row.flag) != nullptr);
      const std::vector<std::string> line = command_line(bit, flag_with_value(row));
      SCOPED_TRACE(testing::PrintToString(line));
      Command command;
      std::string error;
      EXPECT_EQ(parse_command_line(line, command, error), takes) << error;
      if (!takes) {
        EXPECT_EQ(error.find("unknown option " + std::string(row.flag) + " for '"), 0u) << error;
      }
    }
  }
}

TEST(CliFlags, ASwitchRefusesAValueAndAValuedFlagNeedsOne) {
  for (const FlagRow &row : flag_rows()) {
    const unsigned bit = row.commands & kFilter ? kRun : row.commands & -row.commands;
    Command command;
    std::string error;
    if (row.form == ValueForm::None) {
      EXPECT_FALSE(parse_command_line(command_line(bit, {std::string(row.flag) + "=x"}), command, error)) << row.flag;
      EXPECT_EQ(error, std::string(row.flag) + " takes no value");
    } else if (row.form == ValueForm::Required) {
      EXPECT_FALSE(parse_command_line(command_line(bit, {std::string(row.flag) + "="}), command, error)) << row.flag;
      EXPECT_EQ(error, "option " + std::string(row.flag) + " needs a non-empty value");
    }
  }
}

}  // namespace
}  // namespace leaseguard::cli
