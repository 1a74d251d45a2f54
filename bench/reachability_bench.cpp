// The classifier alone (core/reachability/reachability.cpp), over memory of this process: how fast the
// scan reads memory, apart from what a process at exit adds around it (reading device
// memory back, stopping threads, faulting in the classifier's arrays; bench/reachability_costs
// measures those end to end).
//
//   build/default/bench/reachability_bench
//
// BM_ScanData: one block of 1 GiB of pseudo-random words that point nowhere, held by a
// root: the scan's speed through memory as most of a program's memory is (data).
// BM_ScanPointerDense: 10^6 blocks of 32 bytes, each held by a word of one array the root
// holds: every word read is a pointer whose target lies elsewhere in the heap; in the order
// they were allocated (consecutive lookups land near each other), and shuffled.
// scan_GB/s is the floods' speed over the bytes they read (roots and contents); the time
// per iteration adds the sort by address.
// A measurement, never a test.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "reachability.h"

namespace {

using namespace leaseguard::reachability;

struct Classification {
  std::vector<Node> nodes;
  std::vector<MemoryRange> roots;
  std::unique_ptr<uint64_t[]> scratch;

  // Faulted in before it is timed, as the classification at exit does before the stop.
  void make_scratch() {
    const size_t words = scratch_bytes(nodes.size()) / 8 + 1;
    scratch.reset(new uint64_t[words]);
    std::memset(scratch.get(), 0, words * 8);
  }

  Statistics run() {
    Snapshot snapshot;
    snapshot.nodes = nodes.data();
    snapshot.node_count = nodes.size();
    snapshot.program_roots = roots.data();
    snapshot.program_root_count = roots.size();
    return classify(snapshot, scratch.get());
  }
};

Node host_node(const void *block, uint64_t bytes) {
  Node node;
  node.address = reinterpret_cast<uintptr_t>(block);
  node.bytes = bytes;
  node.contents = block;
  node.contents_bytes = bytes;
  return node;
}

// Runs the classification once per iteration; reports its time in all, and the floods'
// speed through the bytes they read (the scan proper: without the sort by address).
void run_and_report(benchmark::State &state, Classification &classification) {
  uint64_t scanned = 0, flood_ns = 0, sort_ns = 0;
  for (auto _ : state) {
    const Statistics statistics = classification.run();
    scanned += statistics.scanned_bytes;
    flood_ns += statistics.flood_ns;
    sort_ns += statistics.sort_ns;
  }
  state.counters["scan_GB/s"] = static_cast<double>(scanned) / static_cast<double>(flood_ns + 1);
  state.counters["scanned_MiB"] = static_cast<double>(scanned) / static_cast<double>(state.iterations()) / (1 << 20);
  state.counters["sort_ms"] = static_cast<double>(sort_ns) / 1e6 / static_cast<double>(state.iterations());
}

void BM_ScanData(benchmark::State &state) {
  const size_t bytes = size_t{1} << 30;
  std::unique_ptr<uint64_t[]> data(new uint64_t[bytes / 8]);
  uint64_t random = 88172645463325252ull;  // xorshift64
  for (size_t i = 0; i < bytes / 8; ++i) {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    data[i] = random | 0xff00000000000000ull;  // never a user-space address
  }
  // The block, and a small one it does not point to, so the lookup's range is not trivial.
  const uint64_t *held[1] = {data.get()};
  auto small = std::make_unique<uint64_t[]>(4);
  Classification classification;
  classification.nodes = {host_node(data.get(), bytes), host_node(small.get(), 32)};
  classification.roots = {{reinterpret_cast<uintptr_t>(held), reinterpret_cast<uintptr_t>(held) + sizeof held}};
  classification.make_scratch();
  run_and_report(state, classification);
}
BENCHMARK(BM_ScanData)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ScanPointerDense(benchmark::State &state) {
  const size_t count = static_cast<size_t>(state.range(0));
  std::vector<void *> blocks(count);
  for (void *&block : blocks) block = std::calloc(1, 32);
  // 1: the array holds them in no order (the lookups' worst case); 0: in the order allocated.
  if (state.range(1) != 0) std::shuffle(blocks.begin(), blocks.end(), std::mt19937_64(42));
  Classification classification;
  classification.nodes.reserve(count);
  for (void *block : blocks) classification.nodes.push_back(host_node(block, 32));
  const auto begin = reinterpret_cast<uintptr_t>(blocks.data());
  classification.roots = {{begin, begin + count * sizeof(void *)}};
  classification.make_scratch();
  run_and_report(state, classification);
  for (void *block : blocks) std::free(block);
}
BENCHMARK(BM_ScanPointerDense)
    ->ArgNames({"blocks", "shuffled"})
    ->Args({1000000, 0})
    ->Args({1000000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
