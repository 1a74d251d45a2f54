// How `leaseguard report` scales with the number of journals in a directory: a service
// that forks a worker per request, or a test suite run under `leaseguard run`, leaves one
// small journal per process. Writes N journals (each its own process: two allocations, one
// of them leaked), then times the report of the directory and reads its peak memory.
//
//   report_scale LEASEGUARD_BINARY [JOURNALS...]     (default: 1000 10000 100000)
//   report_scale --write DIRECTORY JOURNALS           (only writes them: for a profiler)
//
// One line per count: seconds, peak MiB, and seconds per thousand journals (a flat last
// column is a linear report). Nothing is judged here: bench/README.md holds the budget.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tracker.h"

namespace {

using leaseguard::AllocationEvent;
using leaseguard::Api;
using leaseguard::Options;
using leaseguard::Tracker;

// One process's journal: an allocation freed, one leaked.
[[noreturn]] void write_one_journal(const std::string &directory) {
  Options options;
  options.out_dir = directory;
  options.run_id = "scale";
  options.stack_depth = 4;
  options.log_level = leaseguard::LogLevel::Quiet;
  Tracker tracker(options);
  AllocationEvent event;
  event.api = Api::cuMemAlloc_v2;
  event.bytes = 4096;
  event.address = 0x100000000ull;
  tracker.on_alloc(event);
  tracker.on_free(Api::cuMemFree_v2, event.address);
  event.address += 4096;
  tracker.on_alloc(event);
  tracker.finish_process();
  _exit(0);
}

// Writes `count` journals, two processes at a time (the machine's two cores).
bool write_journals(const std::string &directory, long count) {
  constexpr int kAtOnce = 2;
  int running = 0;
  for (long written = 0; written < count || running > 0;) {
    if (written < count && running < kAtOnce) {
      const pid_t child = fork();
      if (child < 0) return false;
      if (child == 0) write_one_journal(directory);
      ++written;
      ++running;
      continue;
    }
    int status = 0;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
    --running;
  }
  return true;
}

// Runs the report of `directory`; its elapsed seconds and peak resident MiB.
bool time_report(const std::string &leaseguard, const std::string &directory, double &seconds, double &peak_mib) {
  const std::string json = "json=" + directory + ".report.json";
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    execl(leaseguard.c_str(), "leaseguard", "report", "--quiet", "--format", json.c_str(), directory.c_str(),
          static_cast<char *>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(child, &status, 0, &usage) != child) return false;
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  std::filesystem::remove(directory + ".report.json");
  // Exit 0: leaks are reported, not failed on, without --fail-on-leak.
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_scale LEASEGUARD_BINARY [JOURNALS...]\n");
    return 2;
  }
  if (argc == 4 && std::string(argv[1]) == "--write") {
    std::filesystem::create_directories(argv[2]);
    return write_journals(argv[2], std::strtol(argv[3], nullptr, 10)) ? 0 : 1;
  }
  std::vector<long> counts;
  for (int i = 2; i < argc; ++i) counts.push_back(std::strtol(argv[i], nullptr, 10));
  if (counts.empty()) counts = {1000, 10000, 100000};
  char pattern[] = "/tmp/report_scale.XXXXXX";
  if (mkdtemp(pattern) == nullptr) return 2;
  const std::string root = pattern;
  std::printf("| journals | report s | peak MiB | s per 1000 journals |\n|---|---|---|---|\n");
  int result = 0;
  for (long count : counts) {
    const std::string directory = root + "/" + std::to_string(count);
    std::filesystem::create_directory(directory);
    double seconds = 0, peak_mib = 0;
    if (count <= 0 || !write_journals(directory, count) || !time_report(argv[1], directory, seconds, peak_mib)) {
      std::fprintf(stderr, "report_scale: %ld journals: failed\n", count);
      result = 1;
    } else {
      std::printf("| %ld | %.2f | %.0f | %.3f |\n", count, seconds, peak_mib, seconds * 1000.0 / count);
      std::fflush(stdout);
    }
    std::filesystem::remove_all(directory);
  }
  std::filesystem::remove_all(root);
  return result;
}
