// Implementation of report production for `run` and `report`.
#include "report_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "output_file.h"
#include "renderers.h"
#include "suppressions.h"
#include "progress.h"
#include "symbolizer.h"
#include "run_directories.h"

namespace leaseguard::cli {
namespace {

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void consider(const std::filesystem::path &path, const std::string &run_id, Inputs &inputs) {
  std::string name = path.filename().string();
  if (!run_id.empty() && name.rfind(run_id + ".", 0) != 0) return;
  if (ends_with(name, ".journal")) inputs.journals.push_back(path.string());
  else if (ends_with(name, ".exits")) inputs.exit_files.push_back(path.string());
}

}  // namespace

bool collect_inputs(const std::vector<std::string> &paths, const std::string &run_id, Inputs &inputs,
                    std::string &error) {
  namespace fs = std::filesystem;
  for (const std::string &path : paths) {
    std::error_code code;
    fs::file_status status = fs::status(path, code);
    if (code || !fs::exists(status)) {
      // A path that is not there is no error to fs::status (ENOENT); one it cannot look at
      // (ENOTDIR, EACCES, ELOOP) is, and says why.
      error = "cannot read " + path + ": " + (code ? code.message() : std::string(std::strerror(ENOENT)));
      return false;
    }
    if (fs::is_directory(status)) {
      // An entry that cannot be looked at (a symbolic link to itself, or to nothing) is no
      // journal: passed over, never an exception.
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, code);
           !code && it != fs::recursive_directory_iterator(); it.increment(code)) {
        std::error_code entry_error;
        if (it->is_regular_file(entry_error)) consider(it->path(), run_id, inputs);
      }
      if (code) {
        error = "cannot read " + path + ": " + code.message();
        return false;
      }
    } else {
      std::string name = fs::path(path).filename().string();
      if (ends_with(name, ".exits")) inputs.exit_files.push_back(path);
      else if (ends_with(name, ".json")) inputs.report_files.push_back(path);
      else inputs.journals.push_back(path);  // any other file is read as a journal
    }
  }
  std::sort(inputs.journals.begin(), inputs.journals.end());
  std::sort(inputs.exit_files.begin(), inputs.exit_files.end());
  return true;
}

// Journals and JSON reports into one symbolized report.
bool load_inputs(const Inputs &inputs, report::Report &report, report::Symbolizer &symbolizer, std::string &error) {
  report::ExitStatuses exits = inputs.exit_statuses;
  for (const std::string &file : inputs.exit_files)
    if (!report::read_exit_statuses(file, exits, error)) return false;
  if (!report::load_report(inputs.journals, exits, report, error)) return false;
  for (const std::string &file : inputs.report_files)
    if (!report::load_report_json(file, report, error)) return false;
  report::Progress::instance().stage("naming the frames", 0);
  symbolizer.symbolize(report);
  return true;
}

// Removes the leaks `keep` rejects, counting them in `counter`.
template <typename Keep>
void remove_leaks(report::Report &report, uint64_t &counter, Keep keep) {
  for (report::ProcessReport &process : report.processes)
    for (report::LeaseEnding &lease : process.leases) {
      std::vector<report::Leak> kept;
      for (report::Leak &leak : lease.leaks) {
        if (keep(process, lease, leak)) kept.push_back(leak);
        else ++counter;
      }
      lease.leaks = std::move(kept);
    }
}

// The inputs of a baseline: a directory of runs stands for its newest run, and a run for its
// symbolized JSON (kRunReportName) where it has one, instead of journals whose binaries may
// have been rebuilt since.
bool collect_baseline(const std::string &path, Inputs &inputs, std::string &error) {
  std::string run = newest_run(path).value_or(path);
  struct stat status;
  const std::string json = run + "/" + kRunReportName;
  if (stat(run.c_str(), &status) == 0 && S_ISDIR(status.st_mode) && stat(json.c_str(), &status) == 0) {
    inputs.report_files.push_back(json);
    return true;
  }
  return collect_inputs({run}, "", inputs, error);
}

// A baseline read from journals whose modules cannot be symbolized any more matches nothing
// in them: said, naming the modules, rather than letting every leak count as new unexplained.
void warn_of_unsymbolized_baseline(const report::Report &baseline, const report::Symbolizer &symbolizer,
                                   const std::string &baseline_path, report::Report &report) {
  std::set<std::string> modules;
  for (const report::ProcessReport &process : baseline.processes)
    for (const report::Frame &frame : process.frames)
      if (!frame.module.empty() && symbolizer.unusable_modules().count(std::string(frame.module)) != 0)
        modules.insert(std::string(frame.module));
  for (const std::string &module : modules)
    report.problems.push_back("the baseline " + baseline_path + " cannot be symbolized in " + module + ": it " +
                              symbolizer.unusable_modules().at(module) +
                              "; its leaks there match nothing, so they all count as new (a baseline from `run` "
                              "keeps its symbolized " +
                              kRunReportName + " for this)");
}

bool apply_baseline(report::Report &report, const std::string &baseline_path, report::Symbolizer &symbolizer,
                    std::string &error) {
  Inputs baseline_inputs;
  if (!collect_baseline(baseline_path, baseline_inputs, error)) return false;
  if (baseline_inputs.journals.empty() && baseline_inputs.report_files.empty()) {
    error = "the baseline " + baseline_path + " holds no journal or JSON report";
    return false;
  }
  report::Report baseline;
  if (!load_inputs(baseline_inputs, baseline, symbolizer, error)) {
    error = "baseline: " + error;
    return false;
  }
  warn_of_unsymbolized_baseline(baseline, symbolizer, baseline_path, report);
  // Each group of the baseline matches as many leaks of its group here, up to as many bytes:
  // a site that leaks more allocations or more bytes than it did keeps the excess (its later
  // leaks), so a leak that grows is not hidden by its having leaked before.
  struct Allowance {
    uint64_t allocations = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Allowance> known;
  for (const report::ProcessReport &process : baseline.processes)
    for (const report::LeaseEnding &lease : process.leases)
      for (const report::Leak &leak : lease.leaks) {
        Allowance &allowance = known[report::leak_signature(process, leak.stack_id, leak.api)];
        ++allowance.allocations;
        allowance.bytes += leak.bytes;
      }
  remove_leaks(report, report.baseline_allocations,
               [&](const report::ProcessReport &process, const report::LeaseEnding &, const report::Leak &leak) {
                 auto found = known.find(report::leak_signature(process, leak.stack_id, leak.api));
                 if (found == known.end()) return true;
                 Allowance &left = found->second;
                 if (left.allocations == 0 || leak.bytes > left.bytes) return true;
                 --left.allocations;
                 left.bytes -= leak.bytes;
                 return false;
               });
  return true;
}

bool check_format_paths(const CommonOptions &options, std::string &error) {
  for (const FormatRequest &request : options.formats) {
    if (request.path.empty()) continue;
    const size_t slash = request.path.rfind('/');
    const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : request.path.substr(0, slash);
    struct stat status;
    const std::string where = "--format " + request.format + "=" + request.path + ": ";
    if (stat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode)) {
      error = where + "no directory " + directory;
      return false;
    }
    if (access(directory.c_str(), W_OK | X_OK) != 0) {
      error = where + "cannot write into " + directory + ": " + std::strerror(errno);
      return false;
    }
    if (stat(request.path.c_str(), &status) == 0 && S_ISDIR(status.st_mode)) {
      error = where + "is a directory";
      return false;
    }
  }
  return true;
}

namespace {

// Where SARIF and JUnit paths are made relative to: --source-root as an absolute path, the
// working directory where it is not given.
std::string absolute_source_root(const std::string &given) {
  char cwd[4096];
  if (!given.empty() && given[0] == '/') return given;
  if (getcwd(cwd, sizeof cwd) == nullptr) return given;
  return given.empty() ? std::string(cwd) : std::string(cwd) + "/" + given;
}

}  // namespace

bool produce_report(const Inputs &inputs, const CommonOptions &options, const std::string &default_dir,
                    FILE *text_stream, report::Report &report, std::string &error, std::vector<std::string> *unwritten,
                    const std::string &run_report) {
  report::Suppressions suppressions;
  if (!options.suppressions.empty() && !suppressions.load(options.suppressions, error)) return false;
  // A line on a terminal saying what a long report is doing; cleared before the text report.
  auto progress = std::make_unique<report::ProgressShown>(!options.quiet && isatty(STDERR_FILENO) == 1);
  report::Symbolizer symbolizer;
  if (!load_inputs(inputs, report, symbolizer, error)) return false;
  for (const auto &[module, why] : symbolizer.unusable_modules())
    report.problems.push_back("no symbols for " + module + ": it " + why);
  if (!run_report.empty()) {
    report::OutputFile file(run_report);
    report::render_json(
        report, [&](std::string_view piece) { file.write(piece); }, report::JsonStacks::Shared);
    std::string write_error;
    if (!file.close(write_error) && unwritten != nullptr) unwritten->push_back(write_error);
  }
  suppressions.apply(report);  // matches symbolized frames, never raw addresses
  remove_leaks(
      report, report.filtered_allocations,
      [&](const report::ProcessReport &, const report::LeaseEnding &lease, const report::Leak &leak) {
        return leak.bytes >= options.min_bytes && (!options.kind || leak.kind == *options.kind) &&
               (options.lease_pattern.empty() || report::wildcard_matches(options.lease_pattern, lease.name)) &&
               (options.api_pattern.empty() || report::wildcard_matches(options.api_pattern, api_name(leak.api)));
      });
  // Leaks made while the journal was full have a lease and nothing else to filter by.
  if (!options.lease_pattern.empty())
    for (report::ProcessReport &process : report.processes)
      for (report::LeaseEnding &lease : process.leases)
        if (!report::wildcard_matches(options.lease_pattern, lease.name)) {
          report.filtered_allocations += lease.unjournaled_allocations;
          lease.unjournaled_allocations = 0;
          lease.unjournaled_bytes = 0;
        }
  if (!options.baseline.empty() && !apply_baseline(report, options.baseline, symbolizer, error)) return false;
  report.suggest_suppressions = options.gen_suppressions;
  report.show_reachable = options.show_reachable;
  report.max_groups = options.max_groups;

  const std::string source_root = absolute_source_root(options.source_root);
  for (const FormatRequest &request : options.formats) {
    static const std::map<std::string, std::string> kExtensions = {{"text", "txt"},    {"json", "json"},
                                                                   {"sarif", "sarif"}, {"junit", "junit.xml"},
                                                                   {"html", "html"},   {"folded", "folded"}};
    std::string path =
        request.path.empty() ? default_dir + "/leaseguard-report." + kExtensions.at(request.format) : request.path;
    // Every format is handed to its file as it is made: with a line, an object or a stack
    // per leak or leak group, a report of many leaks is hundreds of megabytes.
    report::Progress::instance().stage("writing " + path, 0);
    report::OutputFile file(path);
    auto write = [&](std::string_view piece) { file.write(piece); };
    if (request.format == "json") report::render_json(report, write);
    else if (request.format == "sarif") report::render_sarif(report, source_root, write);
    else if (request.format == "text") report::render_text(report, write);
    else if (request.format == "junit") report::render_junit(report, source_root, write);
    else if (request.format == "html") report::render_html(report, write);
    else report::render_folded(report, write);
    std::string write_error;
    if (file.close(write_error)) continue;
    if (unwritten == nullptr) {
      error = write_error;
      return false;
    }
    unwritten->push_back(write_error);
  }
  progress.reset();  // its line is cleared before anything else is written there
  if (!options.quiet && text_stream != nullptr) {
    report::render_text(report,
                        [&](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), text_stream); });
    std::fflush(text_stream);
  }
  return true;
}

}  // namespace leaseguard::cli
