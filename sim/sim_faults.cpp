// Parses LEASEGUARD_SIM_FAULTS once and answers, per call, whether a fault is due.
#include "sim_faults.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "sim_cleared.h"

namespace leaseguard::sim {
namespace {

struct Fault {
  std::string entry_point;
  long nth = 0;  // 0: every call
  int status = 0;
  std::atomic<long> calls{0};
};

// Append-only, so a test can add faults while other threads are inside the simulator.
struct FaultPlan {
  static constexpr size_t kMaxFaults = 64;
  std::atomic<Fault *> faults[kMaxFaults] = {};
  std::atomic<size_t> count{0};
  bool probe = false;  // LEASEGUARD_SIM_PROBE=1: every call is printed (sim_entry.h)

  __attribute__((noinline)) FaultPlan() {
    const char *spec = std::getenv("LEASEGUARD_SIM_FAULTS");
    if (spec != nullptr) add(spec);
    const char *probe_value = std::getenv("LEASEGUARD_SIM_PROBE");
    probe = probe_value != nullptr && std::strcmp(probe_value, "1") == 0;
  }

  void add(const char *spec) {
    if (*spec == '\0') return;
    std::string all(spec);
    size_t pos = 0;
    while (pos <= all.size()) {
      size_t comma = all.find(',', pos);
      std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? all.size() + 1 : comma + 1;
      if (item.empty()) continue;
      size_t colon = item.find(':');
      size_t equals = item.find('=');
      if (colon == std::string::npos || equals == std::string::npos || equals < colon) {
        std::fprintf(stderr, "leaseguard-sim: ignoring malformed fault '%s' (want NAME:N=STATUS)\n", item.c_str());
        continue;
      }
      auto *fault = new Fault;  // lives for the whole process, like the plan
      fault->entry_point = item.substr(0, colon);
      std::string nth = item.substr(colon + 1, equals - colon - 1);
      fault->nth = nth == "*" ? 0 : std::strtol(nth.c_str(), nullptr, 10);
      fault->status = static_cast<int>(std::strtol(item.c_str() + equals + 1, nullptr, 10));
      if (nth != "*" && fault->nth <= 0) {
        std::fprintf(stderr, "leaseguard-sim: ignoring fault '%s': N must be positive or *\n", item.c_str());
        delete fault;
        continue;
      }
      size_t index = count.fetch_add(1);
      if (index >= kMaxFaults) {
        count.store(kMaxFaults);
        delete fault;
        return;
      }
      faults[index].store(fault, std::memory_order_release);
    }
  }
};

// Inlined into every entry point's check: after the first call, one load of the guard.
__attribute__((always_inline)) inline FaultPlan &plan() {
  static FaultPlan instance;
  return instance;
}

// The status the plan's `count` faults inject into this call of entry point `name`, if any.
// Out of line: most runs plan no fault at all, and their calls never come here.
__attribute__((noinline)) int fault_due(FaultPlan &faults, size_t count, const char *name) noexcept {
  for (size_t i = 0; i < count && i < FaultPlan::kMaxFaults; ++i) {
    Fault *fault = faults.faults[i].load(std::memory_order_acquire);
    if (fault == nullptr || fault->entry_point != name) continue;
    long call = fault->calls.fetch_add(1) + 1;
    if (fault->nth == 0 || call == fault->nth) return fault->status;
  }
  return EntryPoint::kNoFault;
}

// How often each entry point was called. Each thread counts into a row of its own, written
// only by that thread (a relaxed load and store, no locked instruction) and read by
// call_count under the registry's lock. A thread that exits folds its row into `retired`
// and leaves it for the next new thread.
constexpr size_t kMaxEntryPoints = 1024;

struct CallCounts {
  std::atomic<uint64_t> calls[kMaxEntryPoints] = {};
};

struct CallRegistry {
  std::mutex mutex;
  ClearedVector<EntryPoint *> entry_points;  // index order
  ClearedVector<CallCounts *> live;          // the rows of running threads
  ClearedVector<CallCounts *> spare;         // rows of exited threads, zeroed
  uint64_t retired[kMaxEntryPoints] = {};    // what exited threads counted
  pthread_key_t exit_key{};
  bool has_exit_key = false;
};

void retire_row(void *row);

// Never destroyed: threads may still exit, and count, after static destructors ran.
CallRegistry &registry() {
  static CallRegistry *instance = [] {
    auto *created = new (cleared_memory_for<CallRegistry>()) CallRegistry;
    created->has_exit_key = pthread_key_create(&created->exit_key, retire_row) == 0;
    // A fork while another thread holds the lock would leave the child's copy held forever.
    pthread_atfork([] { registry().mutex.lock(); }, [] { registry().mutex.unlock(); },
                   [] { registry().mutex.unlock(); });
    return created;
  }();
  return *instance;
}

__thread CallCounts *t_row __attribute__((tls_model("initial-exec"))) = nullptr;

// The registry is made when the library is loaded, while no other thread can be inside it:
// its function-local static is then never being constructed when some thread forks.
__attribute__((constructor)) void make_registry_at_load() { registry(); }

void retire_row(void *row) {
  auto *counts = static_cast<CallCounts *>(row);
  CallRegistry &calls = registry();
  std::lock_guard lock(calls.mutex);
  for (size_t i = 0; i < kMaxEntryPoints; ++i) {
    calls.retired[i] += counts->calls[i].load(std::memory_order_relaxed);
    counts->calls[i].store(0, std::memory_order_relaxed);
  }
  calls.live.erase(std::find(calls.live.begin(), calls.live.end(), counts));
  calls.spare.push_back(counts);  // cannot throw: live just gave up a slot of the same size
  t_row = nullptr;
}

// This thread's row, made on its first call; nullptr if memory ran out.
__attribute__((noinline)) CallCounts *adopt_row() noexcept {
  CallRegistry &calls = registry();
  std::lock_guard lock(calls.mutex);
  CallCounts *row = nullptr;
  try {
    calls.live.reserve(calls.live.size() + 1);
    calls.spare.reserve(calls.live.size() + calls.spare.size() + 1);
    if (!calls.spare.empty()) {
      row = calls.spare.back();
      calls.spare.pop_back();
    } else {
      row = new CallCounts;
    }
  } catch (...) {
    return nullptr;
  }
  calls.live.push_back(row);
  if (calls.has_exit_key) pthread_setspecific(calls.exit_key, row);
  t_row = row;
  return row;
}

}  // namespace

uint32_t EntryPoint::join_registry() noexcept {
  CallRegistry &calls = registry();
  std::lock_guard lock(calls.mutex);
  uint32_t index = index_.load(std::memory_order_relaxed);
  if (index != kUnregistered) return index;  // another thread registered it meanwhile
  index = kNoColumn;
  try {
    calls.entry_points.push_back(this);
    if (calls.entry_points.size() <= kMaxEntryPoints) index = static_cast<uint32_t>(calls.entry_points.size() - 1);
  } catch (...) {
    // Out of memory: index stays kNoColumn, counted in overflow_calls where call_count
    // cannot find it.
  }
  index_.store(index, std::memory_order_release);
  return index;
}

int EntryPoint::called() noexcept {
  uint32_t index = index_.load(std::memory_order_acquire);
  if (index == kUnregistered) index = join_registry();
  CallCounts *row = index < kMaxEntryPoints ? t_row : nullptr;
  if (row == nullptr && index < kMaxEntryPoints) row = adopt_row();
  if (row != nullptr) {
    std::atomic<uint64_t> &count = row->calls[index];
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    overflow_calls_.fetch_add(1, std::memory_order_relaxed);
  }
  FaultPlan &faults = plan();
  if (faults.probe) std::fprintf(stderr, "leaseguard-sim: %s\n", name_);
  const size_t planned = faults.count.load(std::memory_order_acquire);
  if (planned == 0) return kNoFault;
  return fault_due(faults, planned, name_);
}

bool probing() noexcept { return plan().probe; }

void add_faults(const char *spec) noexcept {
  try {
    if (spec != nullptr) plan().add(spec);
  } catch (...) {
  }
}

uint64_t call_count(const char *name) noexcept {
  CallRegistry &calls = registry();
  std::lock_guard lock(calls.mutex);
  uint64_t total = 0;
  for (const EntryPoint *entry_point : calls.entry_points) {
    if (std::strcmp(entry_point->name(), name) != 0) continue;
    total += entry_point->overflow_calls();
    const size_t index = entry_point->index();
    if (index >= kMaxEntryPoints) continue;
    total += calls.retired[index];
    for (const CallCounts *row : calls.live) total += row->calls[index].load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace leaseguard::sim
