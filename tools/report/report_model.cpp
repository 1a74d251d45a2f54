// The report model's own methods (report_model.h).
#include "report_model.h"

#include <set>
#include <string>

namespace leaseguard::report {

uint64_t LeaseEnding::leaked_bytes() const {
  uint64_t total = unjournaled_bytes;
  for (const Leak &leak : leaks) total += leak.bytes;
  return total;
}

uint64_t ProcessReport::leaked_bytes() const {
  uint64_t total = 0;
  for (const LeaseEnding &lease : leases) total += lease.leaked_bytes();
  return total;
}

const SiteGrowth *ProcessReport::growth_of(uint32_t stack_id, Api api) const {
  auto found = site_growth_index.find(uint64_t{stack_id} << 16 | static_cast<uint16_t>(api));
  return found != site_growth_index.end() ? &site_growth[found->second] : nullptr;
}

StackView ProcessReport::stack(uint32_t stack_id) const {
  auto found = stacks.find(stack_id);
  return found == stacks.end() ? StackView() : StackView(frames, found->second);
}

void ProcessReport::add_stack(uint32_t stack_id, const std::vector<Frame> &stack) {
  std::vector<uint32_t> indices;
  indices.reserve(stack.size());
  for (const Frame &frame : stack) {
    std::string key = frame.module.str() + '\x1f' + frame.build_id.str() + '\x1f' + std::to_string(frame.offset) +
                      '\x1f' + std::to_string(frame.address) + '\x1f' + (frame.function ? "+" + *frame.function : "-") +
                      '\x1f' + (frame.file ? "+" + *frame.file : "-") + '\x1f' +
                      (frame.line ? std::to_string(*frame.line) : "-") + (frame.inlined ? "\x1fi" : "");
    auto [known, added] = frame_ids.try_emplace(std::move(key), static_cast<uint32_t>(frames.size()));
    if (added) frames.push_back(frame);
    indices.push_back(known->second);
  }
  stacks[stack_id] = std::move(indices);
}

uint64_t ProcessReport::leaked_allocations() const {
  uint64_t total = 0;
  for (const LeaseEnding &lease : leases) total += lease.leaked_allocations();
  return total;
}

uint64_t ProcessReport::reachable_bytes() const {
  uint64_t total = 0;
  for (const LeaseEnding &lease : leases)
    for (const Leak &leak : lease.reachable) total += leak.bytes;
  return total;
}

uint64_t ProcessReport::reachable_allocations() const {
  uint64_t total = 0;
  for (const LeaseEnding &lease : leases) total += lease.reachable.size();
  return total;
}

uint64_t Report::reachable_bytes() const {
  uint64_t total = 0;
  for (const ProcessReport &process : processes) total += process.reachable_bytes();
  return total;
}

uint64_t Report::reachable_allocations() const {
  uint64_t total = 0;
  for (const ProcessReport &process : processes) total += process.reachable_allocations();
  return total;
}

const char *reachability_name(Reachability value) {
  switch (value) {
    case Reachability::Direct: return "direct";
    case Reachability::Indirect: return "indirect";
    case Reachability::Reachable: return "reachable";
    case Reachability::Unchecked: break;
  }
  return "unchecked";
}

std::optional<Reachability> reachability_from_name(std::string_view name) {
  for (auto value : {Reachability::Unchecked, Reachability::Direct, Reachability::Indirect, Reachability::Reachable})
    if (name == reachability_name(value)) return value;
  return std::nullopt;
}

uint64_t AuthorityLease::gave_back_bytes() const {
  uint64_t total = 0;
  for (const LeaseProcessAccount &process : processes) total += process.gave_back_bytes;
  return total;
}

uint64_t AuthorityLease::held_bytes() const {
  uint64_t total = 0;
  for (const LeaseProcessAccount &process : processes)
    for (const auto &[device, bytes] : process.held) total += bytes;
  return total;
}

uint64_t Report::leaked_bytes() const {
  uint64_t total = 0;
  for (const ProcessReport &process : processes) total += process.leaked_bytes();
  return total;
}

uint64_t Report::leaked_allocations() const {
  uint64_t total = 0;
  for (const ProcessReport &process : processes) total += process.leaked_allocations();
  return total;
}

Observed observed(const Report &report) {
  if (report.recording_disabled) return Observed::Disabled;
  bool all_without_driver = true;
  for (const ProcessReport &process : report.processes) {
    if (process.allocations != 0 || process.leaked_allocations() != 0 || process.reachable_allocations() != 0)
      return Observed::Allocations;
    const bool known = (process.drivers & journal::kDriversKnown) != 0;
    all_without_driver = all_without_driver && known && (process.drivers & ~journal::kDriversKnown) == 0;
  }
  return all_without_driver ? Observed::NoDriver : Observed::NoAllocation;
}

std::string_view observed_name(Observed observed) {
  switch (observed) {
    case Observed::Allocations: return "allocations";
    case Observed::Disabled: return "disabled";
    case Observed::NoDriver: return "no_driver";
    case Observed::NoAllocation: return "no_allocation";
  }
  return "allocations";
}

std::string nothing_checked(const Report &report) {
  const bool simulated = report.simulated.value_or(false);
  const std::string without_gpu = report.simulated.has_value() && !simulated
                                      ? "; without a GPU, `leaseguard run --sim` runs the program on the simulated one"
                                      : "";
  switch (observed(report)) {
    case Observed::Allocations: return "";
    case Observed::Disabled: return "recording was disabled (LEASEGUARD_DISABLE=1): nothing was recorded";
    case Observed::NoDriver:
      return "no process loaded a GPU driver (libcuda.so.1, libamdhip64.so) or recorded an allocation" + without_gpu +
             " (a statically linked or setuid program is never recorded)";
    case Observed::NoAllocation:
      return std::string("no allocation was recorded: the program made none, or its driver refused them") +
             (simulated ? "; LEASEGUARD_SIM_PROBE=1 shows every call the program made to the simulator" : without_gpu);
  }
  return "";
}

size_t Report::lease_count() const {
  size_t total = 0;
  for (const ProcessReport &process : processes) {
    std::set<uint32_t> ids;
    for (const LeaseEnding &lease : process.leases) ids.insert(lease.id);
    total += ids.size();
  }
  return total;
}

}  // namespace leaseguard::report
