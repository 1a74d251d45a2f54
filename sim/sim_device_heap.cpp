// The simulated device's address space (sim_device_heap.h).
#include "sim_device_heap.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

namespace leaseguard::sim::device_heap {
namespace {

constexpr size_t kSmallestShift = 8;  // 256 bytes: cuMemAlloc's alignment
constexpr size_t kClasses = 9;        // 256 bytes to 64 KiB
constexpr size_t kChunkBytes = size_t{1} << 20;
static_assert(kLargestBlock == size_t{1} << (kSmallestShift + kClasses - 1));
constexpr size_t kRegionBytes = size_t{64} << 30;  // address space only, where it is not limited
constexpr int kReserved = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

size_t page_bytes() {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

bool address_space_limited() {
  rlimit limit{};
  return getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
}

// The ranges of the space: carved from the last region in turn, or a freed one taken again
// (the smallest that fits, its rest kept).
class AddressSpace {
 public:
  void *take(size_t bytes) {
    std::lock_guard lock(mutex);
    char *range = reuse_locked(bytes);
    if (range == nullptr) range = carve_locked(bytes);
    if (range == nullptr) return nullptr;
    if (mmap(range, bytes, PROT_READ | PROT_WRITE, kReserved | MAP_FIXED, -1, 0) == MAP_FAILED) {
      freed_.emplace(bytes, range);
      return nullptr;
    }
    return range;
  }

  void give_back(void *range, size_t bytes) {
    // A fresh inaccessible mapping in its place: its pages go back to the system, and a stray
    // access faults as on a device.
    (void)mmap(range, bytes, PROT_NONE, kReserved | MAP_FIXED, -1, 0);
    std::lock_guard lock(mutex);
    freed_.emplace(bytes, static_cast<char *>(range));
  }

  std::mutex mutex;

 private:
  char *reuse_locked(size_t bytes) {
    const auto fit = freed_.lower_bound(bytes);
    if (fit == freed_.end()) return nullptr;
    char *range = fit->second;
    const size_t rest = fit->first - bytes;
    freed_.erase(fit);
    if (rest != 0) freed_.emplace(rest, range + bytes);
    return range;
  }

  char *carve_locked(size_t bytes) {
    if (left_ < bytes) {
      // What is left of the last region stays free for smaller ranges.
      if (left_ != 0) freed_.emplace(left_, next_);
      left_ = 0;
      // Reserved address space counts against `ulimit -v`: under a limit, a region is only
      // as large as what it is for, and leaves the program its room. Where a large one cannot
      // be had (a tool that manages the address space itself, as valgrind does), a smaller.
      const size_t wanted = bytes + page_bytes();
      size_t region = address_space_limited() ? wanted : std::max(kRegionBytes, wanted);
      void *reserved = MAP_FAILED;
      while ((reserved = mmap(nullptr, region, PROT_NONE, kReserved, -1, 0)) == MAP_FAILED && region > wanted)
        region = std::max(wanted, region / 4);
      if (reserved == MAP_FAILED) return nullptr;
      next_ = static_cast<char *>(reserved) + page_bytes();  // the region's first page: never handed out
      left_ = region - page_bytes();
    }
    char *range = next_;
    next_ += bytes;
    left_ -= bytes;
    return range;
  }

  char *next_ = nullptr;  // the last region's part never handed out (never past its end)
  size_t left_ = 0;
  std::multimap<size_t, char *> freed_;  // by size
};
AddressSpace g_space;

// A free block's first word: the next free block of its size in its shard.
struct FreeBlock {
  FreeBlock *next;
};

// The part of a class's last chunk never handed out: its next block and the bytes left from
// there. Never a pointer to the chunk's end, which may be where the next range begins.
struct Unused {
  char *next = nullptr;
  size_t bytes = 0;
};

struct alignas(64) Shard {
  std::mutex mutex;
  std::array<FreeBlock *, kClasses> free{};
  std::array<Unused, kClasses> unused{};
};
std::array<Shard, kShards> g_shards;

// Each thread keeps up to kCachedPerClass freed blocks of each size for itself, taken and
// given back without a lock (as glibc's tcache keeps heap blocks): a thread that allocates
// and frees in turn, as most do, never touches a shard. What it keeps goes back to a shard
// when it ends.
constexpr uint32_t kCachedPerClass = 32;
struct ThreadCache {
  FreeBlock *free[kClasses];
  uint32_t count[kClasses];
  bool flushed_at_exit;  // the thread-specific value that flushes it is set
};
// Initial-exec: one load from a shared library, as the driver's current context is read.
__thread ThreadCache t_cache __attribute__((tls_model("initial-exec")));

void flush_thread_cache(void *) {
  Shard &shard = g_shards[0];
  std::lock_guard lock(shard.mutex);
  for (size_t size_class = 0; size_class < kClasses; ++size_class) {
    while (FreeBlock *block = t_cache.free[size_class]) {
      t_cache.free[size_class] = block->next;
      block->next = shard.free[size_class];
      shard.free[size_class] = block;
    }
    t_cache.count[size_class] = 0;
  }
}

pthread_key_t thread_cache_key() {
  static const pthread_key_t key = [] {
    pthread_key_t made{};
    pthread_key_create(&made, flush_thread_cache);
    return made;
  }();
  return key;
}

size_t class_of(size_t bytes) {
  size_t size_class = 0;
  while ((size_t{1} << (kSmallestShift + size_class)) < bytes) ++size_class;
  return size_class;
}

// A block of class `size_class` never handed out before (its pages still the mapping's
// zeros), from a new chunk where the last is used up.
void *carve_locked(Shard &shard, size_t size_class) {
  const size_t block_bytes = size_t{1} << (kSmallestShift + size_class);
  Unused &unused = shard.unused[size_class];
  if (unused.bytes == 0) {
    void *chunk = g_space.take(kChunkBytes);
    if (chunk == nullptr) return nullptr;
    unused = Unused{static_cast<char *>(chunk), kChunkBytes};
  }
  char *block = unused.next;
  unused.bytes -= block_bytes;
  unused.next = unused.bytes != 0 ? block + block_bytes : nullptr;
  return block;
}

}  // namespace

void *take(size_t bytes, size_t shard_index) {
  if (bytes == 0 || bytes > kLargestBlock || shard_index >= kShards) return nullptr;
  const size_t size_class = class_of(bytes);
  FreeBlock *reused = t_cache.free[size_class];
  if (reused != nullptr) {
    t_cache.free[size_class] = reused->next;
    --t_cache.count[size_class];
    std::memset(reused, 0, bytes);  // as below
    return reused;
  }
  Shard &shard = g_shards[shard_index];
  {
    std::lock_guard lock(shard.mutex);
    reused = shard.free[size_class];
    if (reused == nullptr) return carve_locked(shard, size_class);
    shard.free[size_class] = reused->next;
  }
  // Memory allocated again reads as zeros, as a fresh range does: never as the allocation
  // before held it, nor as the free list's link (docs/how-it-works.md, "Device memory as a
  // place pointers live").
  std::memset(reused, 0, bytes);
  return reused;
}

void give_back(void *block, size_t bytes, size_t shard_index) {
  if (block == nullptr || bytes == 0 || bytes > kLargestBlock || shard_index >= kShards) return;
  const size_t size_class = class_of(bytes);
  auto *freed = static_cast<FreeBlock *>(block);
  if (t_cache.count[size_class] < kCachedPerClass) {
    if (!t_cache.flushed_at_exit) {
      t_cache.flushed_at_exit = true;
      pthread_setspecific(thread_cache_key(), &t_cache);
    }
    freed->next = t_cache.free[size_class];
    t_cache.free[size_class] = freed;
    ++t_cache.count[size_class];
    return;
  }
  Shard &shard = g_shards[shard_index];
  std::lock_guard lock(shard.mutex);
  freed->next = shard.free[size_class];
  shard.free[size_class] = freed;
}

void *take_range(size_t bytes) {
  if (bytes == 0 || bytes % page_bytes() != 0) return nullptr;
  return g_space.take(bytes);
}

void give_back_range(void *range, size_t bytes) {
  if (range != nullptr && bytes != 0) g_space.give_back(range, bytes);
}

void register_fork_handlers() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] {
    // The shards' locks are taken outside the space's (a chunk is carved under a shard's).
    auto lock_all = [] {
      for (Shard &shard : g_shards) shard.mutex.lock();
      g_space.mutex.lock();
    };
    auto unlock_all = [] {
      g_space.mutex.unlock();
      for (size_t i = kShards; i-- > 0;) g_shards[i].mutex.unlock();
    };
    pthread_atfork(lock_all, unlock_all, unlock_all);
  });
}

}  // namespace leaseguard::sim::device_heap
