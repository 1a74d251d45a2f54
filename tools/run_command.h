// `leaseguard run`: runs a command under the preload, follows its whole process tree, and
// reports what leaked.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "cli_options.h"
#include "report_model.h"

namespace leaseguard::cli {

// What `lease start` adds to a run: variables the command's processes get (the lease they
// join), and what to do once the whole tree has ended, before the report (tell the lease
// authority, and wait for the lease's teardown).
struct RunExtras {
  std::map<std::string, std::string> environment;
  // The command itself ended (its processes left behind may run on); its wait status.
  std::function<void(int command_status)> command_ended;
  // Every process of the command's tree ended; what it adds to `report` is reported with the run.
  std::function<void(const report::ExitStatuses &exits, int command_status, report::Report &report)> tree_ended;
};

int run_command(const RunOptions &options, const RunExtras *extras = nullptr);

}  // namespace leaseguard::cli
