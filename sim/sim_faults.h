// Fault injection for the simulated driver: make the Nth call of a named entry point fail.
//
// LEASEGUARD_SIM_FAULTS="cuMemAlloc_v2:3=2,cuMemFree_v2:1=1" makes the 3rd call of
// cuMemAlloc_v2 return 2 (CUDA_ERROR_OUT_OF_MEMORY) and the 1st call of cuMemFree_v2 return 1,
// without doing anything else. "*" as N fails every call. Counting is per entry point name.
#pragma once

#include <atomic>
#include <cstdint>
#include <climits>

namespace leaseguard::sim {

// One exported entry point of the simulator, declared once where it begins (LG_SIM_ENTRY).
// Its calls are counted per thread, so counting takes no locked instruction and no shared
// cache line: a real driver's cheap queries (cuCtxGetCurrent) stay cheap here too, and a
// hooked allocation is not charged for the simulator's bookkeeping.
class EntryPoint {
 public:
  explicit EntryPoint(const char *name) noexcept;
  EntryPoint(const EntryPoint &) = delete;
  EntryPoint &operator=(const EntryPoint &) = delete;

  // Counts this call; then the status to return instead of running the entry point if a
  // fault is due now, else kNoFault. (A plain int, not std::optional: an optional returned
  // through memory is written a byte at a time and read back whole, which stalls the load.)
  static constexpr int kNoFault = INT32_MIN;
  int called() noexcept;

  const char *name() const noexcept { return name_; }
  uint32_t index() const noexcept { return index_; }
  uint64_t overflow_calls() const noexcept { return overflow_calls_.load(std::memory_order_relaxed); }

 private:
  const char *name_;
  uint32_t index_;                           // its column in every thread's counts
  std::atomic<uint64_t> overflow_calls_{0};  // counted here when there are more entry points than columns
};

// Adds faults in the LEASEGUARD_SIM_FAULTS syntax (tests that start faulting midway).
void add_faults(const char *spec) noexcept;

// How many times entry point `name` was called in this process (tests: "freed exactly once").
uint64_t call_count(const char *name) noexcept;

}  // namespace leaseguard::sim
