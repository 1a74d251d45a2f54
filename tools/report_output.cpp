// Implementation of report production for `run` and `report`.
#include "report_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "report/renderers.h"
#include "report/suppressions.h"
#include "report/symbolizer.h"

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

bool write_file(const std::string &path, const std::string &text, std::string &error) {
  // Reports may hold paths and names from the program: private by default, like journals.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write " + path + ": " + std::strerror(errno);
      close(fd);
      return false;
    }
    written += static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool collect_inputs(const std::vector<std::string> &paths, const std::string &run_id, Inputs &inputs,
                    std::string &error) {
  namespace fs = std::filesystem;
  for (const std::string &path : paths) {
    std::error_code code;
    fs::file_status status = fs::status(path, code);
    if (code || !fs::exists(status)) {
      error = "cannot read " + path + ": no such file or directory";
      return false;
    }
    if (fs::is_directory(status)) {
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, code);
           !code && it != fs::recursive_directory_iterator(); it.increment(code))
        if (it->is_regular_file()) consider(it->path(), run_id, inputs);
      if (code) {
        error = "cannot read " + path + ": " + code.message();
        return false;
      }
    } else {
      std::string name = fs::path(path).filename().string();
      if (ends_with(name, ".exits")) inputs.exit_files.push_back(path);
      else inputs.journals.push_back(path);  // any other file is read as a journal
    }
  }
  std::sort(inputs.journals.begin(), inputs.journals.end());
  std::sort(inputs.exit_files.begin(), inputs.exit_files.end());
  return true;
}

bool produce_report(const Inputs &inputs, const CommonOptions &options, const std::string &default_dir,
                    FILE *text_stream, report::Report &report, std::string &error) {
  report::ExitStatuses exits;
  for (const std::string &file : inputs.exit_files)
    if (!report::read_exit_statuses(file, exits, error)) return false;
  if (!report::load_report(inputs.journals, exits, report, error)) return false;
  report::Suppressions suppressions;
  if (!options.suppressions.empty() && !suppressions.load(options.suppressions, error)) return false;
  report::Symbolizer symbolizer;
  symbolizer.symbolize(report);
  for (const auto &[module, why] : symbolizer.unusable_modules())
    report.problems.push_back("no symbols for " + module + ": it " + why);
  suppressions.apply(report);  // matches symbolized frames, never raw addresses
  report.suggest_suppressions = options.gen_suppressions;

  std::string text;
  auto text_report = [&]() -> const std::string & {
    if (text.empty()) text = report::render_text(report);
    return text;
  };
  std::string source_root = options.source_root;
  if (source_root.empty()) {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) source_root = cwd;
  } else if (source_root[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) source_root = std::string(cwd) + "/" + source_root;
  }
  for (const FormatRequest &request : options.formats) {
    static const std::map<std::string, std::string> kExtensions = {
        {"text", "txt"}, {"json", "json"}, {"sarif", "sarif"}, {"junit", "junit.xml"}, {"folded", "folded"}};
    std::string path = request.path.empty() ? default_dir + "/leaseguard-report." + kExtensions.at(request.format)
                                            : request.path;
    std::string content;
    if (request.format == "json") content = report::render_json(report);
    else if (request.format == "sarif") content = report::render_sarif(report, source_root);
    else if (request.format == "junit") content = report::render_junit(report);
    else if (request.format == "folded") content = report::render_folded(report);
    else content = text_report();
    if (!write_file(path, content, error)) return false;
  }
  if (!options.quiet && text_stream != nullptr) {
    const std::string &out = text_report();
    std::fwrite(out.data(), 1, out.size(), text_stream);
    std::fflush(text_stream);
  }
  return true;
}

}  // namespace leaseguard::cli
