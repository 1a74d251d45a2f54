// Fault injection for the simulated driver: make the Nth call of a named entry point fail.
//
// LEASEGUARD_SIM_FAULTS="cuMemAlloc_v2:3=2,cuMemFree_v2:1=1" makes the 3rd call of
// cuMemAlloc_v2 return 2 (CUDA_ERROR_OUT_OF_MEMORY) and the 1st call of cuMemFree_v2 return 1,
// without doing anything else. "*" as N fails every call. Counting is per entry point name.
#pragma once

#include <atomic>
#include <cstdint>

namespace leaseguard::sim {

// One exported entry point of the simulator, declared once where it begins (LG_SIM_ENTRY).
// Its calls are counted per thread, so counting takes no locked instruction and no shared
// cache line: a real driver's cheap queries (cuCtxGetCurrent) stay cheap here too, and a
// hooked allocation is not charged for the simulator's bookkeeping.
//
// Constant-initialized (a function-local static of it needs no guard): it joins the registry
// of entry points at its first call instead. A guard would be a hazard under fork(): a thread
// that is still constructing the static when another forks leaves the child a guard that
// never opens.
class EntryPoint {
 public:
  constexpr explicit EntryPoint(const char *name) noexcept : name_(name) {}
  EntryPoint(const EntryPoint &) = delete;
  EntryPoint &operator=(const EntryPoint &) = delete;

  // Counts this call; then the status to return instead of running the entry point if a
  // fault is due now, else kNoFault. (A plain int, not std::optional: an optional returned
  // through memory is written a byte at a time and read back whole, which stalls the load.)
  static constexpr int kNoFault = INT32_MIN;
  int called() noexcept;

  const char *name() const noexcept { return name_; }
  uint32_t index() const noexcept { return index_.load(std::memory_order_acquire); }
  uint64_t overflow_calls() const noexcept { return overflow_calls_.load(std::memory_order_relaxed); }

  static constexpr uint32_t kUnregistered = UINT32_MAX;
  static constexpr uint32_t kNoColumn = UINT32_MAX - 1;  // registered, counted in overflow_calls

 private:
  uint32_t join_registry() noexcept;

  const char *name_;
  std::atomic<uint32_t> index_{kUnregistered};  // its column in every thread's counts
  std::atomic<uint64_t> overflow_calls_{0};     // counted here when there are more entry points than columns
};

// Adds faults in the LEASEGUARD_SIM_FAULTS syntax (tests that start faulting midway).
void add_faults(const char *spec) noexcept;

// LEASEGUARD_SIM_PROBE=1: the simulator prints, on stderr, every entry point called, each
// cuGetProcAddress lookup and its answer, and each export table and slot asked for, so that
// what a runtime needs of a driver can be read off a run (sim_export_tables.cpp).
bool probing() noexcept;

// How many times entry point `name` was called in this process (tests: "freed exactly once").
uint64_t call_count(const char *name) noexcept;

}  // namespace leaseguard::sim
