// Parses LEASEGUARD_SIM_FAULTS once and answers, per call, whether a fault is due.
#include "sim_faults.h"

#include <atomic>
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

struct FaultPlan {
  std::vector<Fault *> faults;

  FaultPlan() {
    const char *spec = std::getenv("LEASEGUARD_SIM_FAULTS");
    if (spec == nullptr || *spec == '\0') return;
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
      faults.push_back(fault);
    }
  }
};

FaultPlan &plan() {
  static FaultPlan instance;
  return instance;
}

}  // namespace

std::optional<int> injected_fault(const char *name) noexcept {
  FaultPlan &faults = plan();
  if (faults.faults.empty()) return std::nullopt;
  for (Fault *fault : faults.faults) {
    if (fault->entry_point != name) continue;
    long call = fault->calls.fetch_add(1) + 1;
    if (fault->nth == 0 || call == fault->nth) return fault->status;
  }
  return std::nullopt;
}

}  // namespace leaseguard::sim
