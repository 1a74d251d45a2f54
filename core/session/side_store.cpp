// Implementation of the side store for fields the journal could not take.
#include "side_store.h"

#include <atomic>

#include "lg_assert.h"

namespace leaseguard {
namespace {

// Each thread's shard, handed out in turn as threads first keep something.
std::atomic<uint32_t> g_next_shard{0};
thread_local uint32_t t_shard __attribute__((tls_model("initial-exec"))) = UINT32_MAX;

uint32_t my_shard(uint32_t shards) noexcept {
  if (t_shard == UINT32_MAX) t_shard = g_next_shard.fetch_add(1, std::memory_order_relaxed);
  return t_shard % shards;
}

}  // namespace

uint32_t SideStore::put(const AllocationDetails &fields) noexcept {
  const uint32_t shard_number = my_shard(static_cast<uint32_t>(shards_.size()));
  Shard &shard = shards_[shard_number];
  std::lock_guard lock(shard.mutex);
  try {
    uint32_t index;
    if (!shard.free.empty()) {
      index = shard.free.back();
      shard.free.pop_back();
      shard.fields[index] = fields;
    } else {
      if (shard.fields.size() >= kIndexLimit) return LiveRecord::kNowhere;
      shard.fields.push_back(fields);
      index = static_cast<uint32_t>(shard.fields.size() - 1);
      try {
        // Reserved now, so that release, which must not fail, never has to grow it.
        shard.free.reserve(shard.fields.capacity());
      } catch (...) {
        shard.fields.pop_back();
        throw;
      }
    }
    LG_ASSERT(index < kIndexLimit && shard.free.capacity() >= shard.fields.size());  // release never grows
    return LiveRecord::kInSideStoreBit | shard_number << kIndexBits | index;
  } catch (...) {
    return LiveRecord::kNowhere;
  }
}

AllocationDetails SideStore::get(uint32_t details_at) const noexcept {
  LG_ASSERT((details_at & LiveRecord::kInSideStoreBit) != 0 && details_at != LiveRecord::kNowhere);
  const Shard &shard = shards_[shard_of(details_at)];
  std::lock_guard lock(shard.mutex);
  const uint32_t index = index_of(details_at);
  return index < shard.fields.size() ? shard.fields[index] : AllocationDetails{};
}

void SideStore::release(uint32_t details_at) noexcept {
  LG_ASSERT((details_at & LiveRecord::kInSideStoreBit) != 0 && details_at != LiveRecord::kNowhere);
  Shard &shard = shards_[shard_of(details_at)];
  std::lock_guard lock(shard.mutex);
  const uint32_t index = index_of(details_at);
  LG_ASSERT(index < shard.fields.size() && shard.free.size() < shard.fields.size());  // put handed it out, once
  if (index < shard.fields.size()) shard.free.push_back(index);                       // never grows: reserved by put
}

size_t SideStore::memory_bytes() const {
  size_t bytes = 0;
  for (const Shard &shard : shards_) {
    std::lock_guard lock(shard.mutex);
    bytes += shard.fields.capacity() * sizeof(AllocationDetails) + shard.free.capacity() * sizeof(uint32_t);
  }
  return bytes;
}

}  // namespace leaseguard
