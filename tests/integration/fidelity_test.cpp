// The host program behaves identically with and without leaseguard: same output, same exit
// status, with the preload, with LEASEGUARD_DISABLE=1, and without it. And a program that
// frees everything (also in static destructors and dlclose'd plugins) has no leak.
#include <gtest/gtest.h>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

struct Mode {
  std::vector<std::string> arguments;
  int exit_code;
};

std::vector<Mode> modes() {
  return {{{"exceptions"}, 0},
          {{"signals"}, 0},
          {{"threads"}, 0},
          {{"fork"}, 0},
          {{"dlopen", victim("liballocating_plugin.so")}, 0},
          {{"static"}, 0},
          {{"exit-code"}, 42}};
}

TEST(Fidelity, SameOutputAndStatusWithAndWithoutThePreload) {
  for (const Mode &mode : modes()) {
    std::vector<std::string> command = {victim("fidelity")};
    command.insert(command.end(), mode.arguments.begin(), mode.arguments.end());
    TempDir out;
    auto plain = run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
    auto preloaded = run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                           {"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                           {"LEASEGUARD_OUT", out.path()}});
    auto disabled = run_process(command, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
                                          {"LD_PRELOAD", LEASEGUARD_PRELOAD_PATH},
                                          {"LEASEGUARD_DISABLE", "1"},
                                          {"LEASEGUARD_OUT", out.path()}});
    const std::string name = mode.arguments[0];
    EXPECT_EQ(plain.exit_code, mode.exit_code) << name << plain.out << plain.err;
    EXPECT_FALSE(plain.out.empty()) << name;
    EXPECT_EQ(preloaded.exit_code, plain.exit_code) << name;
    EXPECT_EQ(preloaded.out, plain.out) << name;
    EXPECT_EQ(preloaded.err, plain.err) << name;
    EXPECT_EQ(disabled.exit_code, plain.exit_code) << name;
    EXPECT_EQ(disabled.out, plain.out) << name;
    EXPECT_EQ(disabled.err, plain.err) << name;
  }
}

TEST(Fidelity, AProgramThatFreesEverythingHasNoLeak) {
  for (const Mode &mode : modes()) {
    std::vector<std::string> command = {victim("fidelity")};
    command.insert(command.end(), mode.arguments.begin(), mode.arguments.end());
    TempDir out;
    auto run = run_under_leaseguard(out.path(), command, {"--fail-on-leak=99"});
    EXPECT_EQ(run.result.exit_code, mode.exit_code) << mode.arguments[0] << run.result.err;
    EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0) << mode.arguments[0] << run.result.err;
    EXPECT_NE(run.result.err.find("SUMMARY: leaseguard: 0 byte(s) leaked in 0 allocation(s)."), std::string::npos);
  }
}

}  // namespace
}  // namespace leaseguard::testing
