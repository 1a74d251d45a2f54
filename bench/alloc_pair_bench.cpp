// The cost leaseguard adds to an allocation + free pair, measured side by side in one
// process: the driver's own cuMemAlloc_v2/cuMemFree_v2 (reached through the core link, so
// no hook is in the way) against the same calls through leaseguard's hooks, with a live set
// of 0, 1e3, 1e5 and 1e6 allocations held meanwhile (the cost must not grow with it); and
// hipMalloc + hipFree the same way.
//
// Run it under the preload, on the simulator, once per stack depth:
//   for depth in 0 16 32; do
//     LEASEGUARD_STACK_DEPTH=$depth build/default/bin/leaseguard run --sim --quiet \
//       --out /tmp/bench-$depth -- build/default/bench/alloc_pair_bench
//   done
// Without the preload it says so and measures the driver alone. A measurement, never a test.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "core_link.h"
#include "lg_cuda.h"

namespace {

struct Driver {
  lg_pfn_cuMemAlloc_v2 alloc = nullptr;
  lg_pfn_cuMemFree_v2 free = nullptr;
};

// What the program calls: leaseguard's hooks when it is preloaded.
Driver hooked() { return {&cuMemAlloc_v2, &cuMemFree_v2}; }

// The driver's own functions, behind no hook.
Driver direct() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  const leaseguard_core_link *link = link_of != nullptr ? link_of() : nullptr;
  if (link == nullptr) return hooked();  // no preload: the calls are the driver's anyway
  return {reinterpret_cast<lg_pfn_cuMemAlloc_v2>(link->real_function(library, "cuMemAlloc_v2")),
          reinterpret_cast<lg_pfn_cuMemFree_v2>(link->real_function(library, "cuMemFree_v2"))};
}

// The device's primary context, current on every benchmark thread.
void set_up_context() {
  static CUcontext context = [] {
    CUdevice device = 0;
    CUcontext primary = nullptr;
    cuInit(0);
    cuDeviceGet(&device, 0);
    cuDevicePrimaryCtxRetain(&primary, device);
    return primary;
  }();
  thread_local bool current = cuCtxSetCurrent(context) == CUDA_SUCCESS;
  (void)current;
}

__attribute__((noinline)) void pair(const Driver &driver, benchmark::State &state) {
  CUdeviceptr pointer = 0;
  if (driver.alloc(&pointer, 256) != CUDA_SUCCESS || driver.free(pointer) != CUDA_SUCCESS)
    state.SkipWithError("the driver refused");
}

void BM_AllocFreePair(benchmark::State &state, bool through_hooks) {
  set_up_context();
  const Driver driver = through_hooks ? hooked() : direct();
  // The live set, held through the same path, so the hooked run's table holds it.
  std::vector<CUdeviceptr> live(static_cast<size_t>(state.range(0)));
  for (CUdeviceptr &pointer : live) driver.alloc(&pointer, 256);
  for (auto _ : state) pair(driver, state);
  for (CUdeviceptr pointer : live) driver.free(pointer);
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_AllocFreePair, direct, false)->Arg(0)->Arg(1000)->Arg(100000)->Arg(1000000);
BENCHMARK_CAPTURE(BM_AllocFreePair, hooked, true)->Arg(0)->Arg(1000)->Arg(100000)->Arg(1000000);
// hipMalloc + hipFree on the simulated HIP runtime, the same way.
using HipMalloc = int (*)(void **, size_t);
using HipFree = int (*)(void *);

void BM_HipPair(benchmark::State &state, bool through_hooks) {
  void *library = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    state.SkipWithError("no libamdhip64.so.5");
    return;
  }
  auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  const leaseguard_core_link *link = link_of != nullptr ? link_of() : nullptr;
  void *alloc = dlsym(RTLD_DEFAULT, "hipMalloc");
  void *release = dlsym(RTLD_DEFAULT, "hipFree");
  if (!through_hooks && link != nullptr) {
    alloc = link->real_function(library, "hipMalloc");
    release = link->real_function(library, "hipFree");
  }
  auto hip_malloc = reinterpret_cast<HipMalloc>(alloc);
  auto hip_free = reinterpret_cast<HipFree>(release);
  for (auto _ : state) {
    void *pointer = nullptr;
    if (hip_malloc(&pointer, 256) != 0 || hip_free(pointer) != 0) state.SkipWithError("the runtime refused");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_HipPair, direct, false);
BENCHMARK_CAPTURE(BM_HipPair, hooked, true);

BENCHMARK_CAPTURE(BM_AllocFreePair, direct_threads, false)->Arg(0)->Threads(1)->Threads(2)->Threads(4)->Threads(8);
BENCHMARK_CAPTURE(BM_AllocFreePair, hooked_threads, true)->Arg(0)->Threads(1)->Threads(2)->Threads(4)->Threads(8);

}  // namespace

int main(int argc, char **argv) {
  if (dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1") == nullptr)
    std::fprintf(stderr, "alloc_pair_bench: leaseguard is not preloaded; both series measure the driver alone\n");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
