// Generated programs through the tracker and back through its journal's report: the property
// test of tests/fuzz/fuzz_tracker.cpp (allocations, frees, leases of each kind it drives,
// policies, context destroys, journal modes), run on inputs drawn from a fixed seed,
// so every build of CI checks the model, the report and the conservation law the replay
// asserts (tools/report/journal_replay.cpp). The fuzz stage runs the same target longer.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace leaseguard {
namespace {

TEST(TrackerProperty, GeneratedProgramsAgreeWithTheModelAndAccountEveryAllocationOnce) {
  std::mt19937 generator(20261205);
  // Each input's first byte picks the journal mode (full, compact, none) the way the
  // fuzzer reads it; the rest are operations.
  for (int program = 0; program < 1000; ++program) {
    std::vector<uint8_t> input(16 + generator() % 400);
    for (uint8_t &byte : input) byte = static_cast<uint8_t>(generator());
    if (program % 3 == 1) input[0] = 0xF0;  // compact
    if (program % 3 == 2) input[0] = 0x00;  // full
    SCOPED_TRACE(program);
    LLVMFuzzerTestOneInput(input.data(), input.size());  // a disagreement aborts, naming it
  }
}

}  // namespace
}  // namespace leaseguard
