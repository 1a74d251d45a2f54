// Host-program fidelity: behaviours a leak checker must not change. Each mode prints what
// it observed; the test compares output and exit status with and without the preload.
// Every mode frees what it allocates, so under leaseguard it also reports no leak.
//   fidelity exceptions | signals | threads | fork | dlopen PLUGIN | static | exit-code
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

namespace {

void check(CUresult status, const char *what) {
  if (status != CUDA_SUCCESS) {
    std::printf("%s failed: %d\n", what, static_cast<int>(status));
    std::exit(3);
  }
}

CUcontext g_context = nullptr;

void init() {
  if (g_context != nullptr) return;
  CUdevice device;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&g_context, device), "retain");
  check(cuCtxSetCurrent(g_context), "set current");
}

// Allocates in its constructor and frees in its destructor, which runs after main returns:
// leaseguard must not call that a leak.
struct DeviceBufferAtStaticScope {
  CUdeviceptr pointer = 0;
  DeviceBufferAtStaticScope() {
    init();
    check(cuMemAlloc_v2(&pointer, 4096), "static alloc");
  }
  ~DeviceBufferAtStaticScope() {
    check(cuMemFree_v2(pointer), "static free");
    std::printf("static destructor freed its buffer\n");
  }
} g_static_buffer;

struct Guard {
  CUdeviceptr pointer = 0;
  explicit Guard(size_t bytes) { check(cuMemAlloc_v2(&pointer, bytes), "guard alloc"); }
  ~Guard() { cuMemFree_v2(pointer); }
};

int exceptions() {
  int caught = 0;
  for (int i = 0; i < 100; ++i) {
    try {
      Guard guard(256 + static_cast<size_t>(i));
      if (i % 3 == 0) throw std::runtime_error("error path " + std::to_string(i));
    } catch (const std::runtime_error &error) {
      ++caught;
    }
  }
  std::printf("caught %d exceptions\n", caught);
  return 0;
}

std::atomic<int> g_signals{0};
void on_signal(int) {
  // A handler that allocates and frees device memory: async-signal-unsafe in general, but
  // programs do it, and leaseguard must not make it worse.
  CUdeviceptr pointer = 0;
  if (cuMemAlloc_v2(&pointer, 64) == CUDA_SUCCESS) cuMemFree_v2(pointer);
  g_signals.fetch_add(1);
}

int signals() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGUSR1, &action, nullptr);
  for (int i = 0; i < 20; ++i) {
    Guard guard(128);
    raise(SIGUSR1);
  }
  std::printf("handled %d signals\n", g_signals.load());
  return 0;
}

int threads() {
  std::vector<std::thread> workers;
  std::atomic<long> total{0};
  for (int t = 0; t < 6; ++t)
    workers.emplace_back([&] {
      check(cuCtxSetCurrent(g_context), "set current");
      for (int i = 0; i < 500; ++i) {
        Guard guard(32 + static_cast<size_t>(i));
        total.fetch_add(1);
      }
    });
  for (auto &worker : workers) worker.join();
  std::printf("threads made %ld allocations\n", total.load());
  return 0;
}

int forking() {
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    { Guard guard(1024); }
    std::printf("child allocated and freed\n");
    std::fflush(stdout);
    _exit(5);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exited with %d\n", WEXITSTATUS(status));
  return 0;
}

int plugin(const char *path) {
  for (int round = 0; round < 3; ++round) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::printf("dlopen failed: %s\n", dlerror());
      return 4;
    }
    auto work = reinterpret_cast<int (*)(int)>(dlsym(library, "plugin_work"));
    std::printf("plugin round %d: %d\n", round, work != nullptr ? work(round) : -1);
    dlclose(library);
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  init();
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "exceptions") return exceptions();
  if (mode == "signals") return signals();
  if (mode == "threads") return threads();
  if (mode == "fork") return forking();
  if (mode == "dlopen" && argc > 2) return plugin(argv[2]);
  if (mode == "static") return 0;
  if (mode == "exit-code") return 42;
  std::printf("unknown mode\n");
  return 2;
}
