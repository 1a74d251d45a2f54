// Command-line parsing of run and report: what is accepted and the one-line errors.
#include <gtest/gtest.h>

#include "cli_options.h"

namespace leaseguard::cli {
namespace {

bool parse(std::vector<std::string> arguments, Command &command, std::string &error) {
  return parse_command_line(arguments, command, error);
}

TEST(CommandLine, RunWithEveryOption) {
  Command command;
  std::string error;
  ASSERT_TRUE(parse(
      {"run", "--sim", "--out", "o", "--ttl=250ms", "--on-expiry", "abort", "--stack-depth=8", "--journal", "compact",
       "--format", "json", "--format=text=r.txt", "--fail-on-leak=7", "--quiet", "--", "prog", "--flag"},
      command, error))
      << error;
  EXPECT_EQ(command.subcommand, Subcommand::Run);
  const RunOptions &run = command.run;
  EXPECT_TRUE(run.sim);
  EXPECT_EQ(run.common.out_dir, "o");
  EXPECT_EQ(run.values.ttl_ms, 250u);
  EXPECT_EQ(run.values.on_expiry, Policy::Abort);
  EXPECT_EQ(run.values.stack_depth, 8);
  EXPECT_EQ(run.values.journal_mode, JournalMode::Compact);
  // Passed on to the command as given, each as its variable (core/base/option_table.h).
  EXPECT_EQ(run.settings, (std::vector<std::pair<std::string, std::string>>{{"LEASEGUARD_TTL", "250ms"},
                                                                            {"LEASEGUARD_ON_EXPIRY", "abort"},
                                                                            {"LEASEGUARD_STACK_DEPTH", "8"},
                                                                            {"LEASEGUARD_JOURNAL", "compact"}}));
  ASSERT_EQ(run.common.formats.size(), 2u);
  EXPECT_EQ(run.common.formats[0].format, "json");
  EXPECT_EQ(run.common.formats[0].path, "");
  EXPECT_EQ(run.common.formats[1].path, "r.txt");
  EXPECT_EQ(run.common.fail_on_leak, 7);
  EXPECT_TRUE(run.common.quiet);
  EXPECT_EQ(run.command, (std::vector<std::string>{"prog", "--flag"}));
}

TEST(CommandLine, HelpAmongASubcommandsOptionsAsksForTheUsage) {
  for (const auto &arguments : std::vector<std::vector<std::string>>{{"run", "--help"},
                                                                     {"run", "-h"},
                                                                     {"run", "--sim", "--help", "--", "prog"},
                                                                     {"report", "-h"},
                                                                     {"report", "dir", "--help"},
                                                                     {"diff", "--help"},
                                                                     {"diff", "a", "b", "-h"}}) {
    Command command;
    std::string error;
    ASSERT_TRUE(parse(arguments, command, error)) << ::testing::PrintToString(arguments) << ": " << error;
    EXPECT_EQ(command.subcommand, Subcommand::Help) << ::testing::PrintToString(arguments);
  }
}

TEST(CommandLine, HelpThatBelongsToTheCommandOrIsAPathIsLeftAlone) {
  Command command;
  std::string error;
  ASSERT_TRUE(parse({"run", "--sim", "--", "prog", "--help"}, command, error)) << error;
  EXPECT_EQ(command.subcommand, Subcommand::Run);
  EXPECT_EQ(command.run.command, (std::vector<std::string>{"prog", "--help"}));
  ASSERT_TRUE(parse({"run", "prog", "-h"}, command, error)) << error;
  EXPECT_EQ(command.run.command, (std::vector<std::string>{"prog", "-h"}));
  ASSERT_TRUE(parse({"report", "--", "--help"}, command, error)) << error;
  EXPECT_EQ(command.subcommand, Subcommand::Report);
  EXPECT_EQ(command.report.paths, (std::vector<std::string>{"--help"}));
}

TEST(CommandLine, EveryPolicy) {
  for (const auto &[name, policy] : std::vector<std::pair<std::string, Policy>>{
           {"report", Policy::Report}, {"reclaim", Policy::Reclaim}, {"abort", Policy::Abort}}) {
    Command command;
    std::string error;
    ASSERT_TRUE(parse({"run", "--on-expiry", name, "--", "p"}, command, error)) << error;
    EXPECT_EQ(command.run.values.on_expiry, policy);
  }
}

TEST(CommandLine, FailOnLeakDefaultsTo23) {
  Command command;
  std::string error;
  ASSERT_TRUE(parse({"run", "--fail-on-leak", "--", "prog"}, command, error));
  EXPECT_EQ(command.run.common.fail_on_leak, 23);
}

TEST(CommandLine, CommandWithoutSeparator) {
  Command command;
  std::string error;
  ASSERT_TRUE(parse({"run", "--sim", "prog", "--sim"}, command, error));
  EXPECT_EQ(command.run.command, (std::vector<std::string>{"prog", "--sim"}));
}

TEST(CommandLine, EachBadInputIsOneClearLine) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"run"},
      {"run", "--"},
      {"run", "--ttl", "soon", "--", "p"},
      {"run", "--ttl", "-5s", "--", "p"},
      {"run", "--ttl"},
      {"run", "--ttl=", "--", "p"},
      {"run", "--on-expiry", "explode", "--", "p"},
      {"run", "--stack-depth", "-1", "--", "p"},
      {"run", "--stack-depth", "65", "--", "p"},
      {"run", "--stack-depth", "99999999999999999999", "--", "p"},
      {"run", "--journal", "smaller", "--", "p"},
      {"run", "--journal", "--", "p"},
      {"run", "--format", "pdf", "--", "p"},
      {"run", "--format", "svg", "--", "p"},
      {"run", "--source-root", "", "--", "p"},
      {"run", "--format", "json=", "--", "p"},
      {"run", "--fail-on-leak=0", "--", "p"},
      {"run", "--fail-on-leak=256", "--", "p"},
      {"run", "--fail-on-leak=x", "--", "p"},
      {"run", "--out", "", "--", "p"},
      {"run", "--sim=yes", "--", "p"},
      {"run", "--bogus", "--", "p"},
      {"run", "--suppressions", "", "--", "p"},
      {"run", "--gen-suppressions=yes", "--", "p"},
      {"report"},
      {"report", "--bogus", "x"},
      {"diff", "a"},
      {"diff", "a", "b", "c"},
      {"report", "--min-bytes", "-1", "x"},
      {"report", "--kind", "gpu", "x"},
      {"report", "--max-groups", "0", "x"},
  };
  for (const auto &arguments : cases) {
    Command command;
    std::string error;
    EXPECT_FALSE(parse(arguments, command, error)) << testing::PrintToString(arguments);
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(CommandLine, ReportPathsAndOptions) {
  Command command;
  std::string error;
  ASSERT_TRUE(
      parse({"report", "dir", "--format", "json=x.json", "--fail-on-leak", "--", "--odd-name"}, command, error));
  EXPECT_EQ(command.report.paths, (std::vector<std::string>{"dir", "--odd-name"}));
  EXPECT_EQ(command.report.common.formats[0].path, "x.json");
}

TEST(CommandLine, LeaseStartTakesItsOwnOptionsAndRunsTheRestAsRun) {
  Command command;
  std::string error;
  // The lease's --ttl and --on-expiry are the lease's wherever they come before the command;
  // run's options, with their values, are run's.
  ASSERT_TRUE(parse(
      {"lease",     "start",      "--sim",    "--out", "o",        "--name", "12345", "--ttl", "2s",    "--on-expiry",
       "terminate", "--grace=1s", "--socket", "/s",    "--format", "json",   "--",    "prog",  "--ttl", "9"},
      command, error))
      << error;
  EXPECT_EQ(command.subcommand, Subcommand::Lease);
  const LeaseOptions &lease = command.lease;
  EXPECT_EQ(lease.verb, LeaseVerb::Start);
  EXPECT_EQ(lease.name, "12345");
  EXPECT_EQ(lease.ttl_ms, 2000u);
  EXPECT_EQ(lease.teardown, authority::Teardown::Terminate);
  EXPECT_EQ(lease.grace_ms, 1000u);
  EXPECT_EQ(lease.socket, "/s");
  EXPECT_TRUE(lease.run.sim);
  EXPECT_EQ(lease.run.common.out_dir, "o");
  EXPECT_TRUE(lease.run.settings.empty()) << "the lease's TTL is not the process lease's";
  EXPECT_EQ(lease.run.command, (std::vector<std::string>{"prog", "--ttl", "9"}));
}

TEST(CommandLine, LeaseAndDaemonAndTopMistakesAreOneLineEach) {
  const std::vector<std::vector<std::string>> wrong = {
      {"lease"},
      {"lease", "fly"},
      {
          "lease",
          "start",
          "--",
      },
      {"lease", "start", "--name", "a/b", "--", "prog"},
      {"lease", "start", "--ttl", "soon", "--", "prog"},
      {"lease", "start", "--on-expiry", "abort", "--", "prog"},
      {"lease", "start", "--grace", "2h", "--", "prog"},
      {"lease", "start", "--bogus", "--", "prog"},
      {"lease", "end"},
      {"lease", "end", "a", "b"},
      {"lease", "extend", "a"},
      {"lease", "extend", "a", "later"},
      {"lease", "list", "x"},
      {"lease", "list", "--all"},
      {"daemon", "--port", "1"},
      {"daemon", "--socket"},
      {"top", "--every", "1"},
  };
  for (const auto &arguments : wrong) {
    Command command;
    std::string error;
    EXPECT_FALSE(parse(arguments, command, error)) << arguments[0] << " " << (arguments.size() > 1 ? arguments[1] : "");
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  Command command;
  std::string error;
  ASSERT_TRUE(parse({"lease", "extend", "job", "30m", "--socket=/s"}, command, error)) << error;
  EXPECT_EQ(command.lease.verb, LeaseVerb::Extend);
  EXPECT_EQ(command.lease.extend_ms, 30u * 60 * 1000);
  ASSERT_TRUE(parse({"daemon", "--metrics", "127.0.0.1:0", "--textfile=/t.prom", "--state", "/st"}, command, error));
  EXPECT_EQ(command.daemon.metrics_address, "127.0.0.1:0");
  EXPECT_EQ(command.daemon.textfile, "/t.prom");
  ASSERT_TRUE(parse({"top", "--once", "--out", "o"}, command, error)) << error;
  EXPECT_TRUE(command.top.once);
  EXPECT_EQ(command.top.out_dir, "o");
}

}  // namespace
}  // namespace leaseguard::cli
