// Producing a report from journals and writing it where the user asked.
#pragma once

#include <string>
#include <vector>

#include "cli_options.h"
#include "report_model.h"

namespace leaseguard::cli {

// Journals (*.journal) and exit-status files (*.exits) under `paths` (directories are
// searched recursively), or only those whose name starts with `run_id` + "." if given; and
// JSON reports (*.json) named directly (not searched for: a directory's report.json would
// count its journals twice).
struct Inputs {
  std::vector<std::string> journals;
  std::vector<std::string> exit_files;
  std::vector<std::string> report_files;  // JSON reports named on the command line
  report::ExitStatuses exit_statuses;     // known without a file: `run`'s own processes
};
bool collect_inputs(const std::vector<std::string> &paths, const std::string &run_id, Inputs &inputs,
                    std::string &error);

// Before any work: every --format path can be written (its directory exists and is one;
// the path is no directory). The real open decides in the end; this only keeps a run from
// finding out after the command ran. Paths left empty (the output directory's) are not
// checked here.
bool check_format_paths(const CommonOptions &options, std::string &error);

// Loads, symbolizes, writes the requested formats and the text report (to `text_stream`
// unless quiet). Returns false on an I/O error or unreadable input. A format file that
// cannot be written is such an error, unless `unwritten` is given: then it is added there
// and the others are still written (`run`, whose exit status is the program's).
// `run_report`: where to write the run's symbolized JSON (run_directories.h) first, if given.
bool produce_report(const Inputs &inputs, const CommonOptions &options, const std::string &default_dir,
                    FILE *text_stream, report::Report &report, std::string &error,
                    std::vector<std::string> *unwritten = nullptr, const std::string &run_report = "");

}  // namespace leaseguard::cli
