// libFuzzer target: the duration and integer parsers, the environment parser, the CLI
// argument parser (on arbitrary NUL-separated words) and the exit-status file reader.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cli_options.h"
#include "options.h"
#include "report_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  words.push_back(word);

  for (const std::string &text : words) {
    leaseguard::parse_duration_ms(text);
    leaseguard::parse_integer(text, -1000, 1000);
  }

  // Every variable parse_options reads (core/base/options.cpp), each given one of the words.
  static const char *const kNames[] = {
      "LEASEGUARD_OUT",     "LEASEGUARD_TTL",          "LEASEGUARD_ON_EXPIRY",   "LEASEGUARD_STACK_DEPTH",
      "LEASEGUARD_DISABLE", "LEASEGUARD_LOG",          "LEASEGUARD_RUN_ID",      "LEASEGUARD_DEADLINE",
      "LEASEGUARD_JOURNAL", "LEASEGUARD_REACHABILITY", "LEASEGUARD_DEVICE_SCAN", "LEASEGUARD_RUN_PID_NAMESPACE"};
  std::map<std::string, std::string> environment;
  for (size_t i = 0; i < words.size() && i < std::size(kNames); ++i) environment[kNames[i]] = words[i];
  // And the ones past the first words too: a lone word reaches the deadline and the journal.
  if (!words.empty()) {
    environment.try_emplace("LEASEGUARD_DEADLINE", words.back());
    environment.try_emplace("LEASEGUARD_JOURNAL", words.front());
  }
  std::vector<std::string> warnings;
  leaseguard::parse_options(
      [&](const char *name) -> const char * {
        auto it = environment.find(name);
        return it == environment.end() ? nullptr : it->second.c_str();
      },
      warnings);

  leaseguard::cli::Command command;
  std::string error;
  leaseguard::cli::parse_command_line(words, command, error);

  // The exit-status files `run` leaves beside journals, read back by `report`.
  leaseguard::report::ExitStatuses exits;
  leaseguard::report::parse_exit_statuses(std::string(reinterpret_cast<const char *>(data), size), "fuzz", exits,
                                          error);
  return 0;
}
