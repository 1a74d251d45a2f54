// GpuSession::mem_alloc + the handle's drop (which frees), against the driver's own
// cuMemAlloc_v2 + cuMemFree_v2 pair, on the simulator:
//
//   build/default/bin/leaseguard run --sim --quiet --out /tmp/bench -- build/default/bench/session_bench
//
// Under the preload the session records through the preload's core; without it (run with
// LD_LIBRARY_PATH=build/default/lib/leaseguard/sim), through its own. A measurement, never a test.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <leaseguard/session.hpp>

namespace {

void BM_SessionAllocDrop(benchmark::State &state) {
  leaseguard::SessionOptions options;
  options.name = "bench";
  options.backend = leaseguard::Backend::Cuda;
  leaseguard::GpuSession session(options);
  for (auto _ : state) {
    leaseguard::GpuMemHandle handle = session.mem_alloc(256);
    benchmark::DoNotOptimize(handle);
  }  // each handle's drop frees it
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SessionAllocDrop);

// The same pair straight to the driver as the program would call it (through leaseguard's
// hooks when preloaded), for scale.
void BM_DriverPair(benchmark::State &state) {
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int *, int);
  using Retain = int (*)(void **, int);
  using SetCurrent = int (*)(void *);
  using Alloc = int (*)(unsigned long long *, size_t);
  using Free = int (*)(unsigned long long);
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver == nullptr) {
    state.SkipWithError("no libcuda.so.1");
    return;
  }
  // Looked up in the global scope, as a program linked with -lcuda binds them: leaseguard's
  // hooks when it is preloaded.
  auto init = reinterpret_cast<Init>(dlsym(RTLD_DEFAULT, "cuInit"));
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(RTLD_DEFAULT, "cuDeviceGet"));
  auto retain = reinterpret_cast<Retain>(dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<SetCurrent>(dlsym(RTLD_DEFAULT, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<Alloc>(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  auto release = reinterpret_cast<Free>(dlsym(RTLD_DEFAULT, "cuMemFree_v2"));
  int device = 0;
  void *context = nullptr;
  if (init(0) != 0 || device_get(&device, 0) != 0 || retain(&context, device) != 0 || set_current(context) != 0) {
    state.SkipWithError("no device");
    return;
  }
  for (auto _ : state) {
    unsigned long long pointer = 0;
    if (alloc(&pointer, 256) != 0 || release(pointer) != 0) state.SkipWithError("the driver refused");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DriverPair);

}  // namespace

BENCHMARK_MAIN();
