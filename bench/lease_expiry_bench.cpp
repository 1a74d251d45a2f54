// How late a lease's expiry fires: from its deadline to the expiry callback, on the
// watchdog thread. The budget (bench/README.md) is 10 ms on an idle machine; this is a
// measurement, never a test assertion.
#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "leases.h"
#include "tracker.h"

namespace {

void BM_LeaseExpiryLatency(benchmark::State &state) {
  std::mutex mutex;
  std::condition_variable fired;
  uint64_t fired_at = 0;
  leaseguard::LeaseRegistry registry(leaseguard::monotonic_ns(), 0, leaseguard::Policy::Report,
                                     [&](leaseguard::Lease &) {
                                       std::lock_guard lock(mutex);
                                       fired_at = leaseguard::monotonic_ns();
                                       fired.notify_all();
                                     });
  const uint64_t ttl_ms = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    uint64_t begin = leaseguard::monotonic_ns();
    {
      std::lock_guard lock(mutex);
      fired_at = 0;
    }
    leaseguard::Lease &lease = registry.begin("bench", ttl_ms, leaseguard::Policy::Report, begin);
    uint64_t deadline = lease.begin_ns + ttl_ms * 1'000'000ull;
    std::unique_lock lock(mutex);
    fired.wait(lock, [&] { return fired_at != 0; });
    state.SetIterationTime(static_cast<double>(fired_at - deadline) / 1e9);
  }
  state.SetLabel("Time = how long after its deadline the expiry ran");
}
BENCHMARK(BM_LeaseExpiryLatency)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(30);

}  // namespace

BENCHMARK_MAIN();
