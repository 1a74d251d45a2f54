// Grouping of leaks by identical stack, entry point and device; address formatting.
#include <algorithm>
#include <map>
#include <tuple>

#include "program_frames.h"
#include "renderers.h"

#include <cinttypes>
#include <cstdio>

namespace leaseguard::report {

std::string hex_address(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%" PRIx64, value);
  return buffer;
}

std::string frame_name(const Frame &frame) {
  if (frame.function) return *frame.function;
  std::string module = frame.module.empty() ? "<unknown>" : frame.module.substr(frame.module.rfind('/') + 1);
  return module + "+" + hex_address(frame.offset);
}

std::string leak_signature(const ProcessReport &process, uint32_t stack_id, Api api) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](const std::string &text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
    hash ^= 0xff;
    hash *= 0x100000001b3ull;
  };
  mix(std::string(api_name(api)));
  // The program's frames only: the C library's below them are named and placed differently
  // from machine to machine (program_frames.h).
  const StackView stack = process.stack(stack_id);
  for (size_t i = 0, count = program_frame_count(stack); i < count; ++i) {
    const Frame &frame = stack[i];
    // Files by their last component: the same code built in another checkout matches.
    std::string file = frame.file ? frame.file->substr(frame.file->rfind('/') + 1) : "";
    mix(frame_name(frame) + "@" + file);
  }
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::vector<LeakGroup> group_leaks(const ProcessReport &, const LeaseEnding &lease) { return group_leaks(lease.leaks); }

std::vector<LeakGroup> group_leaks(const std::vector<Leak> &leaks) {
  std::map<std::tuple<uint32_t, uint16_t, int32_t, bool, uint8_t>, LeakGroup> groups;
  for (const Leak &leak : leaks) {
    auto key = std::make_tuple(leak.stack_id, static_cast<uint16_t>(leak.api), leak.device, leak.reclaimed,
                               static_cast<uint8_t>(leak.reachability));
    LeakGroup &group = groups[key];
    group.stack_id = leak.stack_id;
    group.api = leak.api;
    group.kind = leak.kind;
    group.device = leak.device;
    group.reclaimed = leak.reclaimed;
    group.reachability = leak.reachability;
    group.bytes += leak.bytes;
    group.allocations += 1;
  }
  std::vector<LeakGroup> sorted;
  sorted.reserve(groups.size());
  for (auto &[key, group] : groups) sorted.push_back(group);
  std::stable_sort(sorted.begin(), sorted.end(), [](const LeakGroup &a, const LeakGroup &b) {
    const bool a_indirect = a.reachability == Reachability::Indirect,
               b_indirect = b.reachability == Reachability::Indirect;
    if (a_indirect != b_indirect) return b_indirect;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.allocations != b.allocations) return a.allocations > b.allocations;
    return false;
  });
  return sorted;
}

}  // namespace leaseguard::report
