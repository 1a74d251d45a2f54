#include "check_command.h"

#include <cstdio>
#include <string>

#include "check_request.h"
#include "control_page.h"
#include "files.h"
#include "report_output.h"

namespace leaseguard::cli {

int check_command(const CheckOptions &options) {
  std::string error;
  const std::string dir = options.common.out_dir_given ? options.common.out_dir : ".";
  // Before asking: a report that could not be written would waste the process's pause.
  if ((options.common.out_dir_given && !make_output_directory(dir, error)) ||
      !check_format_paths(options.common, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  ControlPageOfProcess page;
  int32_t status = authority::kCheckNotClassified;
  if (!find_control_page(options.pid, page, error) ||
      !ask_for_check(options.pid, page, options.timeout_ms, status, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  if (status != authority::kCheckDone) {
    std::fprintf(stderr,
                 "leaseguard: error: process %d could not classify its allocations: its reachability is off "
                 "(LEASEGUARD_REACHABILITY=off) or it is exiting\n",
                 options.pid);
    return kUsageError;
  }
  // The check is in the journal now (its Check records come before the answer): the report
  // of the running process lists what it found lost.
  Inputs inputs;
  inputs.journals.push_back(page.journal_path);
  report::Report report;
  if (!produce_report(inputs, options.common, dir, stdout, report, error)) {
    std::fprintf(stderr, "leaseguard: error: %s\n", error.c_str());
    return kUsageError;
  }
  if (options.common.fail_on_leak && report.leaked_allocations() > 0) return *options.common.fail_on_leak;
  return 0;
}

}  // namespace leaseguard::cli
