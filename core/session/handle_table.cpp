// Implementation of the live allocation table.
#include "handle_table.h"

namespace leaseguard {

size_t HandleTable::memory_bytes() const {
  size_t total = 0;
  for (const Shard &shard : shards_) {
    std::lock_guard lock(shard.lock);
    total += shard.records.memory_bytes();
  }
  return total;
}

size_t HandleTable::size() const {
  size_t total = 0;
  for (const Shard &shard : shards_) {
    std::lock_guard lock(shard.lock);
    total += shard.records.size();
  }
  return total;
}

}  // namespace leaseguard
