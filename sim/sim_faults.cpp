// Parses LEASEGUARD_SIM_FAULTS once and answers, per call, whether a fault is due.
#include "sim_faults.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

  FaultPlan() {
    const char *spec = std::getenv("LEASEGUARD_SIM_FAULTS");
    if (spec != nullptr) add(spec);
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
        std::fprintf(stderr, "leaseguard-sim: ignoring malformed fault '%s' (want NAME:N=STATUS)\n",
                     item.c_str());
        continue;
      }
      auto *fault = new Fault;  // lives for the whole process, like the plan
      fault->entry_point = item.substr(0, colon);
      std::string nth = item.substr(colon + 1, equals - colon - 1);
      fault->nth = nth == "*" ? 0 : std::strtol(nth.c_str(), nullptr, 10);
      fault->status = static_cast<int>(std::strtol(item.c_str() + equals + 1, nullptr, 10));
      if (nth != "*" && fault->nth <= 0) {
        std::fprintf(stderr, "leaseguard-sim: ignoring fault '%s': N must be positive or *\n",
                     item.c_str());
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

FaultPlan &plan() {
  static FaultPlan instance;
  return instance;
}

// How often each entry point was called: a lock-free table keyed by the address of the
// entry point's name (each is one string literal).
constexpr size_t kCountSlots = 512;
std::atomic<const char *> g_count_names[kCountSlots];
std::atomic<uint64_t> g_counts[kCountSlots];

void count_call(const char *name) noexcept {
  size_t slot = (reinterpret_cast<uintptr_t>(name) >> 3) % kCountSlots;
  for (size_t probe = 0; probe < kCountSlots; ++probe, slot = (slot + 1) % kCountSlots) {
    const char *held = g_count_names[slot].load(std::memory_order_acquire);
    if (held == nullptr && g_count_names[slot].compare_exchange_strong(held, name, std::memory_order_acq_rel))
      held = name;
    if (held == name) {
      g_counts[slot].fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

}  // namespace

void add_faults(const char *spec) noexcept {
  try {
    if (spec != nullptr) plan().add(spec);
  } catch (...) {
  }
}

uint64_t call_count(const char *name) noexcept {
  uint64_t total = 0;
  for (size_t slot = 0; slot < kCountSlots; ++slot) {
    const char *held = g_count_names[slot].load(std::memory_order_acquire);
    if (held != nullptr && std::strcmp(held, name) == 0) total += g_counts[slot].load(std::memory_order_relaxed);
  }
  return total;
}

std::optional<int> injected_fault(const char *name) noexcept {
  count_call(name);
  FaultPlan &faults = plan();
  const size_t count = faults.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count && i < FaultPlan::kMaxFaults; ++i) {
    Fault *fault = faults.faults[i].load(std::memory_order_acquire);
    if (fault == nullptr || fault->entry_point != name) continue;
    long call = fault->calls.fetch_add(1) + 1;
    if (fault->nth == 0 || call == fault->nth) return fault->status;
  }
  return std::nullopt;
}

}  // namespace leaseguard::sim
