// The core alone, without hooks or a driver: what recording costs leaseguard itself, the
// journal's throughput, and reading a large journal back.
//
//   build/default/bench/core_bench --benchmark_format=json
//
// BM_TrackerPair: Tracker::on_alloc + on_free, stacks off and 16 frames, with a live set
// held meanwhile (flat from 1e3 to 1e6 is a budget). BM_TrackerPairThreads: the same pair on
// 1 to 8 threads at once, stacks off. BM_JournalAppend: 64-byte records per
// second into a journal file, 1 and 2 threads. BM_ReportOfAMillionAllocations: replaying a
// journal of 1e6 allocations of which 1e5 leak (the report budget: under 10 s, 1 GiB; the
// peak resident size of the process is reported as a counter). BM_StackCapture: 16 frames
// captured by the cached walk and by the C++ runtime's unwinder. A measurement, never a test.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "million_allocations.h"
#include "journal_writer.h"
#include "journal_replay.h"
#include "stack_capture.h"
#include "tracker.h"

namespace {

using namespace leaseguard;

std::string scratch_directory(const char *name) {
  std::string path = std::filesystem::temp_directory_path() /
                     ("leaseguard-bench-" + std::string(name) + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

Options bench_options(const std::string &directory, int stack_depth) {
  Options options;
  options.out_dir = directory;
  options.run_id = "bench";
  options.stack_depth = stack_depth;
  options.log_level = LogLevel::Quiet;
  return options;
}

void BM_TrackerPair(benchmark::State &state) {
  const int stack_depth = static_cast<int>(state.range(0));
  const auto live_set = static_cast<uint64_t>(state.range(1));
  std::string directory = scratch_directory("pair");
  {
    Tracker tracker(bench_options(directory, stack_depth));
    AllocationEvent event;
    event.api = Api::cuMemAlloc_v2;
    event.bytes = 256;
    for (uint64_t i = 0; i < live_set; ++i) {
      event.address = 0x700000000000ull + i * 512;
      tracker.on_alloc(event);
    }
    state.counters["bytes_per_live_record"] =
        live_set != 0 ? static_cast<double>(tracker.live_record_bytes()) / static_cast<double>(live_set) : 0.0;
    event.address = 0x100000000ull;
    for (auto _ : state) {
      tracker.on_alloc(event);
      tracker.on_free(Api::cuMemFree_v2, event.address);
    }
    tracker.finish_process();
  }
  std::filesystem::remove_all(directory);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrackerPair)->ArgNames({"stacks", "live"})->ArgsProduct({{0, 16}, {1000, 100000, 1000000}});

// Threads allocating and freeing at once through one tracker, each its own addresses: what
// leaseguard's shared state (the journal's slot counter, the table's shards) costs as
// threads are added, without a driver's own lock in the way (the simulator's serializes
// alloc_pair_bench's threaded series). Real time per pair across all threads: on N cores,
// perfect scaling divides it by N up to N threads.
void BM_TrackerPairThreads(benchmark::State &state) {
  static Tracker *tracker = nullptr;
  static std::string directory;
  if (state.thread_index() == 0) {
    directory = scratch_directory("pair-threads");
    tracker = new Tracker(bench_options(directory, 0));
  }
  AllocationEvent event;
  event.api = Api::cuMemAlloc_v2;
  event.bytes = 256;
  event.address = 0x100000000ull + static_cast<uint64_t>(state.thread_index()) * 0x10000;
  for (auto _ : state) {
    tracker->on_alloc(event);
    tracker->on_free(Api::cuMemFree_v2, event.address);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    tracker->finish_process();
    delete tracker;
    tracker = nullptr;
    std::filesystem::remove_all(directory);
  }
}
BENCHMARK(BM_TrackerPairThreads)->ThreadRange(1, 8)->UseRealTime();

void BM_JournalAppend(benchmark::State &state) {
  static journal::JournalWriter *writer = nullptr;
  static std::string directory;
  if (state.thread_index() == 0) {
    directory = scratch_directory("journal");
    writer = new journal::JournalWriter;
    journal::HeaderPayload header{};
    std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
    header.version = journal::kVersion;
    header.slot_bytes = journal::kSlotBytes;
    std::string error;
    if (!writer->open(directory + "/bench.journal", header, error)) state.SkipWithError(error.c_str());
  }
  journal::AllocPayload alloc{};
  alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
  for (auto _ : state) {
    ++alloc.id;
    writer->append(journal::RecordType::Alloc, &alloc, sizeof alloc);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(journal::kSlotBytes));
  if (state.thread_index() == 0) {
    delete writer;
    writer = nullptr;
    std::filesystem::remove_all(directory);
  }
}
BENCHMARK(BM_JournalAppend)->Threads(1)->Threads(2)->UseRealTime();

// Capturing 16 frames at the bottom of a 21-deep chain: the cached walk (0) against the
// C++ runtime's unwinder (1), which the walk falls back to and is tested against.
__attribute__((noinline)) size_t capture_at_depth(int depth, bool unwinder) {
  if (depth > 0) {
    size_t frames = capture_at_depth(depth - 1, unwinder);
    benchmark::DoNotOptimize(frames);
    return frames;
  }
  uintptr_t frames[16];
  ExcludedCode none;
  return unwinder ? capture_stack_unwinder(frames, 16, none) : capture_stack(frames, 16, none);
}

void BM_StackCapture(benchmark::State &state) {
  const bool unwinder = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(capture_at_depth(21, unwinder));
}
BENCHMARK(BM_StackCapture)->ArgName("unwinder")->Arg(0)->Arg(1);

void BM_ReportOfAMillionAllocations(benchmark::State &state) {
  std::string directory = scratch_directory("report");
  std::string path;
  {
    Tracker tracker(bench_options(directory, 4));
    record_million_allocations(tracker);
    tracker.finish_process();
    path = tracker.journal_path();
  }
  for (auto _ : state) {
    report::ProcessReport process;
    std::string error;
    if (!report::load_journal(path, process, error)) state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(process);
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  std::filesystem::remove_all(directory);
}
BENCHMARK(BM_ReportOfAMillionAllocations)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
