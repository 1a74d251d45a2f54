// The workload behind the report's scale budget, shared by the report benchmark
// (bench/core_bench.cpp) and the scale test (tests/integration/scale_test.cpp), so the
// figure the benchmark gives and the bound the test holds are about the same journal.
#pragma once

#include <cstdint>

#include "tracker.h"

namespace leaseguard {

// One million 4 KiB cuMemAlloc_v2 allocations; nine in ten are freed at once, so 1e5 leak.
inline void record_million_allocations(Tracker &tracker) {
  AllocationEvent event;
  event.api = Api::cuMemAlloc_v2;
  event.bytes = 4096;
  for (uint64_t i = 0; i < 1'000'000; ++i) {
    event.address = 0x100000000ull + i * 256;
    tracker.on_alloc(event);
    if (i % 10 != 0) tracker.on_free(Api::cuMemFree_v2, event.address);
  }
}

}  // namespace leaseguard
