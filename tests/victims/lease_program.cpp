// A generated program for the lease property test (tests/integration/lease_property_test.cpp):
//
//   lease_program KIND END SEED POLICY
//
// KIND: the lease its allocations go to: process, ttl, deadline (the process lease, its
// time given by the test), explicit (leaseguard_lease_begin on the main thread), thread (one
// that a worker thread begins, enters and allocates in), session (a GpuSession).
// END: how that lease ends: exit, expiry, end, context_destroy (the primary context's reset),
// crash (SIGKILL), fork (a forked child runs a program of its own in the lease it inherited;
// both exit), exec (the image is replaced by a fresh one that runs a program of its own).
// POLICY: report, reclaim or abort, for the leases the program begins.
//
// From SEED it allocates buffers of sizes unique in the run and gives each a fate: freed at
// once or later (in time), dropped (no pointer left anywhere) or held (in a global). It prints
// a ledger line for each, flushed before the next step, so that whatever ends the process the
// test knows what it did:
//   P <pid> A <bytes>   allocated         P <pid> F <bytes>   freed before its lease ended
//   P <pid> D <bytes>   dropped           P <pid> H <bytes>   held
//   P <pid> L <bytes>   freed after its lease ended (a late free)
// LEASE_PROGRAM_TTL_MS: the time-to-live of a lease the program begins, with END=expiry.
// Exits 77 where a time-bound lease ended before the program was done allocating (a machine
// too loaded for the time the test gave).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <leaseguard/leaseguard.h>
#include <leaseguard/session.hpp>

#include "core_link.h"
#include "victim.h"

namespace {

constexpr uint64_t kProcessLease = 1;
constexpr int kLeaseOpen = 0;  // leaseguard::LeaseState::Open

struct Options {
  std::string kind, end;
  uint64_t seed = 0;
  int policy = LEASEGUARD_REPORT;
};
Options g_options;

// What the program still holds: found by the scan as reachable, whatever the lease.
CUdeviceptr g_held[64];
int g_held_count = 0;
std::vector<leaseguard::GpuMemHandle> *g_held_handles = new std::vector<leaseguard::GpuMemHandle>;
leaseguard::GpuSession *g_session = nullptr;  // never destroyed: a session left open ends at exit
leaseguard_lease_t g_lease = 0;               // explicit and thread kinds
CUcontext g_context = nullptr;                // the primary context, current on every thread

uint64_t g_random = 0;
uint32_t next_random() {
  g_random ^= g_random << 13;
  g_random ^= g_random >> 7;
  g_random ^= g_random << 17;
  return static_cast<uint32_t>(g_random >> 32);
}

void ledger(char what, size_t bytes) {
  std::printf("P %d %c %zu\n", static_cast<int>(getpid()), what, bytes);
  std::fflush(stdout);
}

void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

const leaseguard_core_link *core() {
  static const leaseguard_core_link *link = [] {
    auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
    return link_of != nullptr ? link_of() : nullptr;
  }();
  return link;
}

bool lease_open() {
  if (g_options.kind == "session") return !g_session->expired();
  const uint64_t lease = g_lease != 0 ? g_lease : kProcessLease;
  return core() != nullptr && core()->lease_state(lease) == kLeaseOpen;
}

// Writes over the stack below the caller, so that no dead frame keeps a dropped pointer.
extern "C" VICTIM_NOINLINE void scrub_stack() {
  volatile char scratch[16384];
  for (size_t i = 0; i < sizeof scratch; ++i) scratch[i] = 0;
}

// One buffer allocated in the lease; its device pointer goes to `kept` or nowhere.
extern "C" VICTIM_NOINLINE void allocate(size_t bytes, int fate, std::vector<CUdeviceptr> &to_free_later) {
  if (g_options.kind == "session") {
    leaseguard::GpuMemHandle handle = g_session->mem_alloc(bytes);
    ledger('A', bytes);
    if (fate == 0) {
      g_session->mem_free(handle);
      ledger('F', bytes);
    } else if (fate == 1) {
      new leaseguard::GpuMemHandle(handle);  // a copy left on the heap and forgotten
      ledger('D', bytes);
    } else {
      g_held_handles->push_back(handle);
      ledger('H', bytes);
    }
    return;
  }
  CUdeviceptr buffer = 0;
  CHECK(cuMemAlloc_v2(&buffer, bytes));
  ledger('A', bytes);
  if (fate == 0) {
    to_free_later.push_back(buffer);
  } else if (fate == 1) {
    ledger('D', bytes);
  } else {
    g_held[g_held_count++] = buffer;
    ledger('H', bytes);
  }
}

extern "C" VICTIM_NOINLINE void free_later(std::vector<CUdeviceptr> &to_free_later) {
  for (const CUdeviceptr buffer : to_free_later) {
    size_t bytes = 0;
    CHECK(cuMemGetAddressRange_v2(nullptr, &bytes, buffer));
    CHECK(cuMemFree_v2(buffer));
    ledger('F', bytes);
  }
  to_free_later.clear();
}

// A program of 3 to 10 buffers, sizes from `base` up, fates from the seed.
void run_program(size_t base) {
  std::vector<CUdeviceptr> to_free_later;
  to_free_later.reserve(16);
  const int buffers = 3 + static_cast<int>(next_random() % 8);
  for (int i = 0; i < buffers && g_held_count < 60; ++i) {
    allocate(base + 256 * static_cast<size_t>(i) + 16 * (next_random() % 8), static_cast<int>(next_random() % 3),
             to_free_later);
    if (next_random() % 3 == 0) free_later(to_free_later);
  }
  free_later(to_free_later);
  scrub_stack();
}

// A held buffer freed after the lease ended: a late free (the API's handles are freed by
// mem_free only while their session lasts, so the session kind has none).
void free_one_late() {
  if (g_options.kind == "session" || g_held_count == 0) return;
  const CUdeviceptr buffer = g_held[--g_held_count];
  size_t bytes = 0;
  if (cuMemGetAddressRange_v2(nullptr, &bytes, buffer) != CUDA_SUCCESS) return;  // reclaimed: size unknown
  CHECK(cuMemFree_v2(buffer));
  ledger('L', bytes);
}

bool time_bound() { return g_options.end == "expiry"; }

void begin_lease() {
  const char *ttl_ms = std::getenv("LEASE_PROGRAM_TTL_MS");  // END=expiry: the time the test gives
  const uint64_t ttl = time_bound() ? (ttl_ms != nullptr ? std::strtoull(ttl_ms, nullptr, 10) : 300) : 0;
  if (g_options.kind == "session") {
    leaseguard::SessionOptions options;
    options.name = "generated";
    options.ttl = std::chrono::milliseconds(ttl);
    options.on_expiry = g_options.policy == LEASEGUARD_RECLAIM ? leaseguard::OnExpiry::Reclaim
                        : g_options.policy == LEASEGUARD_ABORT ? leaseguard::OnExpiry::Abort
                                                               : leaseguard::OnExpiry::Report;
    g_session = new leaseguard::GpuSession(options);
  } else if (g_options.kind == "explicit" || g_options.kind == "thread") {
    g_lease = leaseguard_lease_begin("generated", ttl, g_options.policy);
    if (g_lease == 0 || leaseguard_lease_enter(g_lease) != 0) {
      std::fprintf(stderr, "lease_program: no lease to enter\n");
      std::exit(4);
    }
  }
}

// The lease's end by the program, where END says so.
void end_lease() {
  if (g_options.end == "end") {
    if (g_options.kind == "session") g_session->end();
    else if (g_lease != 0) leaseguard_lease_end(g_lease);
    free_one_late();
  } else if (g_options.end == "expiry") {
    while (lease_open()) sleep_ms(1);
    free_one_late();
  }
}

// The lease's whole life on the calling thread: begun, a program run in it, ended. False
// where a time-bound lease ran out before the program was done.
bool lease_life() {
  begin_lease();
  run_program(10000);
  if (time_bound() && !lease_open()) return false;
  end_lease();
  if (g_lease != 0 && g_options.end != "end" && g_options.end != "expiry") leaseguard_lease_leave();
  return true;
}

void *thread_main(void *) {
  CHECK(cuCtxSetCurrent(g_context));
  return lease_life() ? nullptr : reinterpret_cast<void *>(1);
}

int policy_of(const char *name) {
  if (std::strcmp(name, "reclaim") == 0) return LEASEGUARD_RECLAIM;
  if (std::strcmp(name, "abort") == 0) return LEASEGUARD_ABORT;
  return LEASEGUARD_REPORT;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s KIND END SEED POLICY [after-exec]\n", argv[0]);
    return 2;
  }
  g_options = {argv[1], argv[2], std::strtoull(argv[3], nullptr, 10), policy_of(argv[4])};
  g_random = g_options.seed * 0x9E3779B97F4A7C15ull + 1;
  g_context = victim_primary_context();
  if (argc > 5) {  // the image exec'd by END=exec: a program of its own in the process lease
    g_options.kind = "process";
    run_program(90000);
    return 0;
  }
  if (g_options.kind == "thread") {
    pthread_t worker;
    void *result = nullptr;
    if (pthread_create(&worker, nullptr, thread_main, nullptr) != 0 || pthread_join(worker, &result) != 0) return 5;
    if (result != nullptr) return 77;
  } else if (!lease_life()) {
    return 77;
  }
  if (g_options.end == "context_destroy") {
    CUdevice device = 0;
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxReset_v2(device));
  } else if (g_options.end == "crash") {
    kill(getpid(), SIGKILL);
  } else if (g_options.end == "fork") {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      if (g_lease != 0) leaseguard_lease_enter(g_lease);  // the inherited lease, on this thread
      run_program(50000);
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;
  } else if (g_options.end == "exec") {
    std::fflush(stdout);
    execl("/proc/self/exe", argv[0], argv[1], argv[2], argv[3], argv[4], "after-exec", static_cast<char *>(nullptr));
    return 7;
  }
  return 0;
}
