// Interns captured stacks: each distinct stack gets an id and one Stack record in the
// journal; allocation records carry only the id.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "journal_writer.h"
#include "module_map.h"

namespace leaseguard {

class StackTable {
 public:
  // Returns the id of the stack `frames[0..depth)`, 0 for an empty stack. The first time a
  // stack is seen, its modules and the stack itself are written to `journal` before the id
  // is returned, so a record referring to the id always follows its definition.
  uint32_t intern(const uintptr_t *frames, size_t depth, journal::JournalWriter &journal);

  size_t size() const;

 private:
  struct Entry {
    std::vector<uintptr_t> frames;
    uint32_t id;
    // The code generation its frames belong to: after an unload the same addresses may be
    // another library's code, so an entry matches only captures of its own generation.
    uint64_t code_generation;
    bool matches(const uintptr_t *other, size_t depth, uint64_t now) const;
  };
  static constexpr size_t kShards = 32;
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::unordered_multimap<uint64_t, Entry> entries;
  };
  static uint64_t hash(const uintptr_t *frames, size_t depth);
  // intern() past the lock-free check of recent_: the shard, and the first sighting's journal
  // records. Out of line, so that the common path saves and restores few registers.
  uint32_t intern_locked(const uintptr_t *frames, size_t depth, uint64_t key, uint64_t code_now,
                         std::atomic<const Entry *> &recent, journal::JournalWriter &journal);
  const Entry *find_locked(const Shard &shard, uint64_t key, const uintptr_t *frames, size_t depth,
                           uint64_t code_now) const;

  std::array<Shard, kShards> shards_;
  // The stacks seen most recently, by hash, read without a lock: a stack already interned
  // (nearly every capture in a loop) is found with one load and a compare. Entries are
  // immutable once published, and never freed (node-based maps keep their addresses).
  static constexpr size_t kRecentStacks = 4096;
  std::array<std::atomic<const Entry *>, kRecentStacks> recent_{};
  ModuleMap modules_;
  std::mutex id_mutex_;
  uint32_t next_id_ = 1;
};

}  // namespace leaseguard
