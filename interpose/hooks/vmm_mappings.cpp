// Bookkeeping of live VMM mappings (see vmm_mappings.h). Mapping is rare next to allocation
// (a few per segment), so one mutex and an ordered map are enough.
#include "vmm_mappings.h"

#include <map>
#include <mutex>

namespace leaseguard::interpose {
namespace {

std::mutex g_mutex;
std::map<uint64_t, uint64_t> &mappings() {
  static auto *live = new std::map<uint64_t, uint64_t>;  // never destroyed: hooks run at exit
  return *live;
}

}  // namespace

void note_mapped(uint64_t base, uint64_t size) noexcept {
  try {
    std::lock_guard lock(g_mutex);
    mappings()[base] = size;
  } catch (...) {  // out of memory: a later reclaim of its range may fail, and says so
  }
}

void note_unmapped(uint64_t base, uint64_t size) noexcept {
  std::lock_guard lock(g_mutex);
  auto &live = mappings();
  live.erase(live.lower_bound(base), live.lower_bound(base + size));
}

std::vector<std::pair<uint64_t, uint64_t>> mappings_within(uint64_t base, uint64_t size) noexcept {
  std::vector<std::pair<uint64_t, uint64_t>> found;
  try {
    std::lock_guard lock(g_mutex);
    auto &live = mappings();
    for (auto it = live.lower_bound(base); it != live.end() && it->first < base + size; ++it) found.push_back(*it);
  } catch (...) {
  }
  return found;
}

}  // namespace leaseguard::interpose
