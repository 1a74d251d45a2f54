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
                      (frame.line ? std::to_string(*frame.line) : "-");
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
