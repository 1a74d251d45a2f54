// Loads many journals into one Report, with the exit statuses `leaseguard run` collected.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "progress.h"
#include "files.h"
#include "journal_replay.h"
#include "output_file.h"
#include "report_model.h"

namespace leaseguard::report {

namespace {

struct JournalHeader {
  std::string path;
  journal::HeaderPayload header{};
  bool ok = false;
  bool empty = false;
  uint64_t file_bytes = 0;  // what the file holds on disk (a journal is sparse past its end)
};

// True if a slot after the first holds a committed record's tag: something was recorded.
bool holds_a_record_after_the_header(int fd) {
  std::vector<unsigned char> window(journal::kSlotBytes * 4096);
  for (off_t at = journal::kSlotBytes;;) {
    const ssize_t got = pread(fd, window.data(), window.size(), at);
    if (got <= 0) return false;
    for (ssize_t slot = 0; slot + 4 <= got; slot += journal::kSlotBytes) {
      uint32_t tag = 0;
      std::memcpy(&tag, window.data() + slot, sizeof tag);
      if ((tag & journal::kTagMagicMask) == journal::kTagMagic) return true;
    }
    at += got;
  }
}

JournalHeader read_header(const std::string &path) {
  JournalHeader result;
  result.path = path;
  std::string error;
  struct stat status {};
  const int fd = open_regular_file(path, error, &status);
  if (fd < 0) return result;
  result.file_bytes =
      std::min<uint64_t>(static_cast<uint64_t>(status.st_size), static_cast<uint64_t>(status.st_blocks) * 512);
  unsigned char slot[journal::kSlotBytes] = {};
  ssize_t got = read(fd, slot, sizeof slot);
  // A process killed between creating its journal and committing the header leaves an
  // empty (or zero-filled) file: nothing was recorded, which is not damage. A header
  // destroyed in a journal that holds records is damage (the reader says so).
  uint32_t tag = 0;
  std::memcpy(&tag, slot, sizeof tag);
  result.empty = got >= 0 && (got < 4 || tag == 0) && !holds_a_record_after_the_header(fd);
  close(fd);
  if (got != static_cast<ssize_t>(sizeof slot)) return result;
  std::memcpy(&result.header, slot + 4, sizeof result.header);
  result.ok = std::memcmp(result.header.magic, journal::kFileMagic, sizeof journal::kFileMagic) == 0;
  return result;
}

// Which journals an exec'd image replaced: a journal is replaced by a later one (in start
// order) of the same process, which is the same pid and parent pid, in the same PID namespace
// where both journals say (two processes in two namespaces are each pid 1 there, with parent
// pid 0). Found by one pass from the newest, so a directory of many journals costs what
// each one does (it was a pair test of every two: 10^5 journals took seconds in this alone).
std::vector<bool> replaced_by_exec(const std::vector<JournalHeader> &headers) {
  std::vector<bool> replaced(headers.size(), false);
  // For each pid and parent pid, the namespaces of the later journals (0: unknown).
  std::unordered_map<uint64_t, std::vector<uint64_t>> later;
  for (size_t i = headers.size(); i-- > 0;) {
    if (!headers[i].ok) continue;
    const journal::HeaderPayload &header = headers[i].header;
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(header.pid)) << 32) | static_cast<uint32_t>(header.ppid);
    std::vector<uint64_t> &namespaces = later[key];
    for (uint64_t pid_namespace : namespaces)
      if (pid_namespace == 0 || header.pid_namespace == 0 || pid_namespace == header.pid_namespace) replaced[i] = true;
    if (std::find(namespaces.begin(), namespaces.end(), header.pid_namespace) == namespaces.end())
      namespaces.push_back(header.pid_namespace);
  }
  return replaced;
}

// Why a journal stopped growing, from the errno its JournalFull record holds.
std::string why_the_journal_stopped(int error) {
  if (error == EBADF) return "it was taken away: the program closed or replaced its descriptor";
  if (error == EFBIG) return "the file size limit (ulimit -f), or the most records a journal holds";
  return std::strerror(error);
}

}  // namespace

bool load_report(const std::vector<std::string> &journals, const ExitStatuses &exits, Report &report,
                 std::string &error) {
  std::vector<JournalHeader> headers;
  headers.reserve(journals.size());
  for (const std::string &path : journals) headers.push_back(read_header(path));
  uint64_t total_bytes = 0;
  for (const JournalHeader &header : headers) total_bytes += header.file_bytes;
  Progress &progress = Progress::instance();
  progress.stage(
      journals.size() == 1 ? "reading the journal" : "reading " + std::to_string(journals.size()) + " journals",
      total_bytes);
  uint64_t read_bytes = 0;
  // Process order: by start time, so parents come before their children and an exec'd
  // image after the image it replaced.
  std::stable_sort(headers.begin(), headers.end(), [](const JournalHeader &a, const JournalHeader &b) {
    return a.header.start_realtime_ns < b.header.start_realtime_ns;
  });
  const std::vector<bool> replaced_journals = replaced_by_exec(headers);
  for (size_t i = 0; i < headers.size(); ++i) {
    const bool replaced = replaced_journals[i];
    if (headers[i].empty) {
      report.problems.push_back(headers[i].path + ": empty journal (its process ended while creating it)");
      continue;
    }
    ProcessReport process;
    progress.begin_part(read_bytes);
    read_bytes += headers[i].file_bytes;
    if (!load_journal_replay(headers[i].path, process, replaced, error)) return false;
    progress.set_done(read_bytes);
    process.exec_replaced = replaced;
    if (!process.accounting_problem.empty())
      report.problems.push_back(headers[i].path + ": " + process.accounting_problem);
    if (replaced) {
      process.complete = true;  // its leases ended with its image
    } else if (auto exit = exits.find(process.pid); exit != exits.end()) {
      process.exit_code = exit->second.code;
      process.exit_signal = exit->second.signal;
    }
    const journal::ReadStats &stats = process.read_stats;
    if (stats.damaged()) {
      std::ostringstream problem;
      problem << headers[i].path << ": damaged journal, report is partial ("
              << (stats.damaged_header ? "its header's tag is gone, " : "") << stats.corrupt_slots
              << " corrupt slot(s), " << stats.malformed_records << " malformed record(s), " << stats.truncated_bytes
              << " trailing byte(s))";
      report.problems.push_back(problem.str());
    }
    if (process.journal_full_ms) {
      std::ostringstream problem;
      problem << headers[i].path << ": the journal could not grow " << static_cast<uint64_t>(*process.journal_full_ms)
              << " ms after the process started (" << why_the_journal_stopped(process.journal_full_error)
              << "); allocations after that were not recorded: their leaks are counted, without stacks";
      report.problems.push_back(problem.str());
    }
    if (process.dropped_records > 0)
      report.problems.push_back(headers[i].path + ": " + std::to_string(process.dropped_records) +
                                " record(s) could not be written by the process (journal full or disk error)");
    report.processes.push_back(std::move(process));
  }
  return true;
}

bool parse_exit_statuses(const std::string &text, const std::string &name, ExitStatuses &exits, std::string &error) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    long pid = 0, value = 0;
    std::string kind, extra;
    if (!(fields >> pid >> kind >> value) || (fields >> extra) || (kind != "code" && kind != "signal") || pid <= 0 ||
        pid > INT32_MAX || value < 0 || value > 255) {
      error = name + ":" + std::to_string(number) + ": malformed exit status line";
      return false;
    }
    ExitStatus &status = exits[static_cast<int32_t>(pid)];
    if (kind == "code") status.code = static_cast<int>(value);
    else status.signal = static_cast<int>(value);
  }
  return true;
}

bool read_text_file(const std::string &path, std::string &text) {
  std::string error;
  return read_regular_file(path, text, error);
}

bool read_exit_statuses(const std::string &path, ExitStatuses &exits, std::string &error) {
  std::string text;
  if (!read_text_file(path, text)) {
    error = "cannot read " + path;
    return false;
  }
  return parse_exit_statuses(text, path, exits, error);
}

bool write_exit_statuses(const std::string &path, const ExitStatuses &exits, std::string &error) {
  std::string text;
  for (const auto &[pid, status] : exits) {
    if (status.signal) text += std::to_string(pid) + " signal " + std::to_string(*status.signal) + "\n";
    else if (status.code) text += std::to_string(pid) + " code " + std::to_string(*status.code) + "\n";
  }
  // Whole or not at all: a partial file would make every later report of the directory fail.
  OutputFile file(path);
  file.write(text);
  return file.close(error);
}

}  // namespace leaseguard::report
