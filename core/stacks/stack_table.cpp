// Implementation of stack interning.
#include "stack_table.h"

#include <cstring>

#include "code_generation.h"
#include "lg_assert.h"

namespace leaseguard {

// Every allocation with a stack hashes it, so a frame costs little here: an xor and a
// multiply, in two independent lanes (even and odd frames) so that the multiplies overlap.
// A multiply carries a frame's bits upwards only; the mixing after the loop brings the high
// bits back down, since shards and the recent-stack cache use the low ones.
__attribute__((always_inline)) inline uint64_t StackTable::hash(const uintptr_t *frames, size_t depth) {
  constexpr uint64_t kMultiplier = 0xD6E8FEB86659FD93ull;
  uint64_t even = 0xcbf29ce484222325ull ^ depth;
  uint64_t odd = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 2 <= depth; i += 2) {
    even = (even ^ frames[i]) * kMultiplier;
    odd = (odd ^ frames[i + 1]) * kMultiplier;
  }
  if (i < depth) even = (even ^ frames[i]) * kMultiplier;
  uint64_t h = even ^ (odd << 31 | odd >> 33);
  h ^= h >> 32;
  h *= kMultiplier;
  return h ^ h >> 29;
}

bool StackTable::Entry::matches(const uintptr_t *other, size_t depth, uint64_t now) const {
  return code_generation == now && frames.size() == depth &&
         std::memcmp(frames.data(), other, depth * sizeof(uintptr_t)) == 0;
}

const StackTable::Entry *StackTable::find_locked(const Shard &shard, uint64_t key, const uintptr_t *frames,
                                                 size_t depth, uint64_t code_now) const {
  auto [first, last] = shard.entries.equal_range(key);
  for (auto it = first; it != last; ++it)
    if (it->second.matches(frames, depth, code_now)) return &it->second;
  return nullptr;
}

uint32_t StackTable::intern(const uintptr_t *frames, size_t depth, journal::JournalWriter &journal) {
  if (depth == 0) return 0;
  const uint64_t key = hash(frames, depth);
  const uint64_t code_now = code_generation();
  std::atomic<const Entry *> &recent = recent_[(key >> 20) % kRecentStacks];
  if (const Entry *seen = recent.load(std::memory_order_acquire);
      seen != nullptr && seen->matches(frames, depth, code_now)) {
    LG_ASSERT(seen->id != 0);  // 0 means "no stack"
    return seen->id;
  }
  return intern_locked(frames, depth, key, code_now, recent, journal);
}

__attribute__((noinline)) uint32_t StackTable::intern_locked(const uintptr_t *frames, size_t depth, uint64_t key,
                                                             uint64_t code_now, std::atomic<const Entry *> &recent,
                                                             journal::JournalWriter &journal) {
  Shard &shard = shards_[key % kShards];
  {
    std::lock_guard lock(shard.mutex);
    if (const Entry *entry = find_locked(shard, key, frames, depth, code_now)) {
      recent.store(entry, std::memory_order_release);
      return entry->id;
    }
  }

  // A new stack: resolve its modules without holding the shard lock (ModuleMap explains why).
  std::vector<unsigned char> payload(sizeof(journal::StackPayload) + depth * sizeof(journal::StackFrame));
  for (size_t i = 0; i < depth; ++i) {
    ModuleLocation location = modules_.locate(frames[i], journal);
    journal::StackFrame frame{location.module_id, static_cast<uint32_t>(location.offset),
                              static_cast<uint32_t>(location.offset >> 32)};
    std::memcpy(payload.data() + sizeof(journal::StackPayload) + i * sizeof frame, &frame, sizeof frame);
  }

  std::lock_guard lock(shard.mutex);
  if (const Entry *entry = find_locked(shard, key, frames, depth, code_now)) return entry->id;  // another thread won
  uint32_t id;
  {
    std::lock_guard id_lock(id_mutex_);
    id = next_id_++;
  }
  LG_ASSERT(id != 0);  // ids count from 1, and a stack's record precedes every use of its id
  LG_ASSERT(payload.size() == sizeof(journal::StackPayload) + depth * sizeof(journal::StackFrame));
  journal::StackPayload header{id, static_cast<uint32_t>(depth)};
  std::memcpy(payload.data(), &header, sizeof header);
  journal.append(journal::RecordType::Stack, payload.data(), payload.size());
  auto stored = shard.entries.emplace(key, Entry{std::vector<uintptr_t>(frames, frames + depth), id, code_now});
  LG_ASSERT(stored->second.matches(frames, depth, code_now));  // interned once, found by what it holds
  recent.store(&stored->second, std::memory_order_release);
  return id;
}

size_t StackTable::size() const {
  size_t total = 0;
  for (const Shard &shard : shards_) {
    std::lock_guard lock(shard.mutex);
    total += shard.entries.size();
  }
  return total;
}

}  // namespace leaseguard
