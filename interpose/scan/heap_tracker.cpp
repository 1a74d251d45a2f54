// The host heap table of heap_tracker.h, and the allocator entry points that feed it.
#include "heap_tracker.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "real_dlsym.h"
#include "spin_lock.h"
#include "stack_jump.h"
#include "world_stop.h"

namespace leaseguard::interpose::heap {
namespace {

// ---- the table: open addressing with linear probing, 64 shards, outside the heap ----

struct Entry {
  uintptr_t address;  // 0: empty
  size_t bytes;       // with kOwnBlock where leaseguard allocated the block for itself
};
constexpr size_t kOwnBlock = size_t{1} << 63;

struct alignas(64) Shard {
  SpinLock lock;
  uint32_t capacity_log2 = 0;
  size_t count = 0;
  Entry *entries = nullptr;
};

constexpr size_t kShards = 64;
constexpr uint32_t kFirstCapacityLog2 = 10;
std::array<Shard, kShards> g_shards;

inline uint64_t mix(uintptr_t address) noexcept { return (address >> 4) * 0x9E3779B97F4A7C15ull; }
inline Shard &shard_of(uint64_t mixed) noexcept { return g_shards[mixed >> 58]; }
inline size_t home_of(uint64_t mixed, size_t mask) noexcept { return (mixed >> 16) & mask; }

// The table's memory comes from the kernel directly, never through the mmap family the
// preload interposes (program_mappings.h): the first call there looks the next definition up
// with dlsym, which frees memory, and a free inside this heap call is a nested one, which
// leaves the table alone and counts the heap incomplete. (A cudart program linked with cuBLAS
// grew a shard during cuBLAS's constructors before anything had called munmap: its lost
// allocations all read `unchecked`.)
Entry *map_entries(size_t capacity) noexcept {
  void *memory = reinterpret_cast<void *>(
      syscall(SYS_mmap, nullptr, capacity * sizeof(Entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  return memory == MAP_FAILED ? nullptr : static_cast<Entry *>(memory);
}

void unmap_entries(Entry *entries, size_t capacity) noexcept { syscall(SYS_munmap, entries, capacity * sizeof(Entry)); }

void place(Entry *entries, size_t mask, uintptr_t address, size_t bytes) noexcept {
  for (size_t i = home_of(mix(address), mask);; i = (i + 1) & mask) {
    if (entries[i].address == 0 || entries[i].address == address) {
      entries[i] = Entry{address, bytes};
      return;
    }
  }
}

// Every shard's first table, in one mapping made once: a program whose blocks never
// outgrow them maps nothing more, so the tables never take address ranges the program's
// unmapping freed (a library loaded again where an unloaded one was).
std::atomic<Entry *> g_first_tables{nullptr};

Entry *first_table(const Shard &shard) noexcept {
  Entry *tables = g_first_tables.load(std::memory_order_acquire);
  if (tables == nullptr) {
    Entry *made = map_entries(kShards << kFirstCapacityLog2);
    if (made == nullptr) return nullptr;
    if (!g_first_tables.compare_exchange_strong(tables, made, std::memory_order_acq_rel))
      unmap_entries(made, kShards << kFirstCapacityLog2);
    else tables = made;
  }
  return tables + (static_cast<size_t>(&shard - g_shards.data()) << kFirstCapacityLog2);
}

// False if the table could not grow (no memory): the block goes untracked, and the scan
// says the heap is incomplete.
bool grow(Shard &shard) noexcept {
  const uint32_t log2 = shard.capacity_log2 == 0 ? kFirstCapacityLog2 : shard.capacity_log2 + 1;
  if (shard.entries == nullptr) {
    shard.entries = first_table(shard);
    shard.capacity_log2 = log2;
    return shard.entries != nullptr;
  }
  Entry *bigger = map_entries(size_t{1} << log2);
  if (bigger == nullptr) return false;
  Entry *old = shard.entries;
  const uint32_t old_log2 = shard.capacity_log2;
  const size_t old_capacity = size_t{1} << old_log2;
  for (size_t i = 0; i < old_capacity; ++i)
    if (old[i].address != 0) place(bigger, (size_t{1} << log2) - 1, old[i].address, old[i].bytes);
  // The new table in place before the old one goes: a child forked in between has a table.
  shard.entries = bigger;
  shard.capacity_log2 = log2;
  // The first tables share one mapping: theirs stays mapped, its pages given back.
  if (old_log2 != kFirstCapacityLog2) unmap_entries(old, old_capacity);
  else syscall(SYS_madvise, old, old_capacity * sizeof(Entry), MADV_DONTNEED);
  return true;
}

std::atomic<bool> g_lost_blocks{false};

void insert(uintptr_t address, size_t bytes) noexcept {
  const uint64_t mixed = mix(address);
  Shard &shard = shard_of(mixed);
  std::lock_guard lock(shard.lock);
  if ((shard.count + 1) * 2 > (shard.entries == nullptr ? 0 : size_t{1} << shard.capacity_log2) && !grow(shard)) {
    g_lost_blocks.store(true, std::memory_order_relaxed);
    return;
  }
  const size_t mask = (size_t{1} << shard.capacity_log2) - 1;
  for (size_t i = home_of(mixed, mask);; i = (i + 1) & mask) {
    Entry &entry = shard.entries[i];
    if (entry.address == address) {  // a block whose free went around us
      entry.bytes = bytes;
      return;
    }
    if (entry.address == 0) {
      entry = Entry{address, bytes};
      ++shard.count;
      return;
    }
  }
}

// Calls change(entry) on the entry of the block at `address`, under its shard's lock; false
// if there is none.
template <typename Change>
bool with_entry(uintptr_t address, Change change) noexcept {
  const uint64_t mixed = mix(address);
  Shard &shard = shard_of(mixed);
  std::lock_guard lock(shard.lock);
  if (shard.entries == nullptr) return false;
  const size_t mask = (size_t{1} << shard.capacity_log2) - 1;
  for (size_t i = home_of(mixed, mask); shard.entries[i].address != 0; i = (i + 1) & mask)
    if (shard.entries[i].address == address) {
      change(shard.entries[i]);
      return true;
    }
  return false;
}

// The erased block's size, or 0 if it was not tracked.
size_t erase(uintptr_t address) noexcept {
  const uint64_t mixed = mix(address);
  Shard &shard = shard_of(mixed);
  std::lock_guard lock(shard.lock);
  if (shard.entries == nullptr) return 0;
  const size_t mask = (size_t{1} << shard.capacity_log2) - 1;
  size_t hole = home_of(mixed, mask);
  for (;; hole = (hole + 1) & mask) {
    if (shard.entries[hole].address == 0) return 0;  // not tracked (allocated before, or elsewhere)
    if (shard.entries[hole].address == address) break;
  }
  const size_t bytes = shard.entries[hole].bytes & ~kOwnBlock;
  // Backward-shift deletion: no tombstones, so probes stay short however often blocks churn.
  for (size_t next = (hole + 1) & mask; shard.entries[next].address != 0; next = (next + 1) & mask) {
    const size_t home = home_of(mix(shard.entries[next].address), mask);
    const bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
    if (stays) continue;
    shard.entries[hole] = shard.entries[next];
    hole = next;
  }
  shard.entries[hole].address = 0;
  --shard.count;
  return bytes;
}

// ---- the next allocator, and the bootstrap heap used while finding it ----

struct NextAllocator {
  void *(*malloc)(size_t) = nullptr;
  void (*free)(void *) = nullptr;
  void *(*calloc)(size_t, size_t) = nullptr;
  void *(*realloc)(void *, size_t) = nullptr;
  void *(*memalign)(size_t, size_t) = nullptr;
  int (*posix_memalign)(void **, size_t, size_t) = nullptr;
  void *(*aligned_alloc)(size_t, size_t) = nullptr;
  void *(*valloc)(size_t) = nullptr;
  void *(*pvalloc)(size_t) = nullptr;
};
NextAllocator g_next;
std::atomic<int> g_state{0};  // 0: not resolved, 1: resolving, 2: ready
pthread_t g_resolver;
bool g_tracking = false;
bool g_hooks_installed = false;
bool g_program_uses_ours = false;

// dlsym may allocate (its error buffer) while the next allocator is being found: those
// requests are served here, and never freed.
alignas(16) char g_bootstrap[64 * 1024];
std::atomic<size_t> g_bootstrap_used{0};

bool from_bootstrap(const void *pointer) noexcept {
  return pointer >= static_cast<const void *>(g_bootstrap) &&
         pointer < static_cast<const void *>(g_bootstrap + sizeof g_bootstrap);
}

void *bootstrap_allocate(size_t bytes) noexcept {
  const size_t rounded = (bytes + 16 + 15) & ~size_t{15};
  const size_t at = g_bootstrap_used.fetch_add(rounded);
  if (at + rounded > sizeof g_bootstrap) return nullptr;
  std::memcpy(g_bootstrap + at, &bytes, sizeof bytes);
  return g_bootstrap + at + 16;
}

size_t bootstrap_size(const void *pointer) noexcept {
  size_t bytes;
  std::memcpy(&bytes, static_cast<const char *>(pointer) - 16, sizeof bytes);
  return bytes;
}

bool tracking_wanted() noexcept {
  const char *value = getenv("LEASEGUARD_REACHABILITY");
  const char *disabled = getenv("LEASEGUARD_DISABLE");
  if (disabled != nullptr && std::strcmp(disabled, "1") == 0) return false;
  return value == nullptr || std::strcmp(value, "off") != 0;
}

// True once the next allocator is known; false on the thread finding it (use the bootstrap).
bool ready() noexcept {
  int state = g_state.load(std::memory_order_acquire);
  if (__builtin_expect(state == 2, true)) return true;
  if (state == 1 && pthread_equal(g_resolver, pthread_self())) return false;
  int expected = 0;
  if (g_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    g_resolver = pthread_self();
    find_symbol(g_next.malloc, RTLD_NEXT, "malloc");
    find_symbol(g_next.free, RTLD_NEXT, "free");
    find_symbol(g_next.calloc, RTLD_NEXT, "calloc");
    find_symbol(g_next.realloc, RTLD_NEXT, "realloc");
    find_symbol(g_next.memalign, RTLD_NEXT, "memalign");
    find_symbol(g_next.posix_memalign, RTLD_NEXT, "posix_memalign");
    find_symbol(g_next.aligned_alloc, RTLD_NEXT, "aligned_alloc");
    find_symbol(g_next.valloc, RTLD_NEXT, "valloc");
    find_symbol(g_next.pvalloc, RTLD_NEXT, "pvalloc");
    g_tracking = tracking_wanted();
    g_state.store(2, std::memory_order_release);
    return true;
  }
  while (g_state.load(std::memory_order_acquire) != 2) sched_yield();
  return true;
}

// ---- deferring the world stop across a tracked call ----

thread_local int t_in_call __attribute__((tls_model("initial-exec"))) = 0;
thread_local int t_stop_waiting __attribute__((tls_model("initial-exec"))) = 0;  // set by the tracer
// The outermost tracked call's frame, for a jump that leaves it (stack_jump.h).
thread_local uintptr_t t_call_frame __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

bool begin_tracked_call() noexcept {
  const bool outermost = t_in_call++ == 0;
  if (outermost) t_call_frame = stack_pointer();
  return outermost;
}

void end_tracked_call() noexcept {
  if (--t_in_call == 0 && __builtin_expect(t_stop_waiting != 0, false)) {
    t_stop_waiting = 0;
    park_after_deferred_stop();
  }
}

namespace {

class TrackedCall {
 public:
  TrackedCall() noexcept : nested_(!begin_tracked_call()) {}
  // A call made while another is in progress on this thread comes from a signal handler
  // that interrupted it, maybe inside the table with a shard's lock held: it leaves the table
  // alone, and the heap counts as incomplete (lost allocations are then unchecked).
  bool nested() const noexcept {
    if (__builtin_expect(nested_, false)) g_lost_blocks.store(true, std::memory_order_relaxed);
    return nested_;
  }
  ~TrackedCall() { end_tracked_call(); }
  TrackedCall(const TrackedCall &) = delete;
  TrackedCall &operator=(const TrackedCall &) = delete;

 private:
  bool nested_;
};

void *track(void *pointer, size_t bytes) noexcept {
  if (pointer != nullptr) insert(reinterpret_cast<uintptr_t>(pointer), bytes == 0 ? 1 : bytes);
  return pointer;
}

// ---- a sanitizer's runtime owns malloc: its hooks feed the table ----

extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
                                                         void (*)(const volatile void *)) __attribute__((weak));

void sanitizer_malloc_hook(const volatile void *pointer, size_t bytes) {
  insert(reinterpret_cast<uintptr_t>(pointer), bytes == 0 ? 1 : bytes);
}
void sanitizer_free_hook(const volatile void *pointer) { erase(reinterpret_cast<uintptr_t>(pointer)); }

// A forked child has only the forking thread: a shard another thread had locked at the fork
// stays locked forever, and may be half changed. The child unlocks it and counts its heap as
// incomplete (its lost allocations are then reported unchecked). Holding every shard across
// the fork instead would deadlock with a library whose fork handler takes a lock under which
// another thread allocates (the handlers of libraries initialized before leaseguard run
// after leaseguard's).
void after_fork_in_child() noexcept {
  for (Shard &shard : g_shards) {
    if (shard.lock.try_lock()) {
      shard.lock.unlock();
      continue;
    }
    shard.lock.unlock();
    g_lost_blocks.store(true, std::memory_order_relaxed);
  }
}

}  // namespace

bool complete() noexcept {
  return g_tracking && (g_program_uses_ours || g_hooks_installed) && !g_lost_blocks.load(std::memory_order_relaxed);
}

bool tracks(uintptr_t address) noexcept {
  return g_tracking && with_entry(address, [](Entry &) {});
}

void mark_own(const void *block) noexcept {
  if (g_tracking && block != nullptr)
    with_entry(reinterpret_cast<uintptr_t>(block), [](Entry &entry) { entry.bytes |= kOwnBlock; });
}

size_t live_blocks() noexcept {
  size_t count = 0;
  for (const Shard &shard : g_shards) count += shard.count;
  return count;
}

void for_each_block(void (*visit)(void *, uintptr_t, size_t, bool), void *context) noexcept {
  for (const Shard &shard : g_shards) {
    if (shard.entries == nullptr) continue;
    const size_t capacity = size_t{1} << shard.capacity_log2;
    for (size_t i = 0; i < capacity; ++i) {
      const Entry &entry = shard.entries[i];
      if (entry.address != 0) visit(context, entry.address, entry.bytes & ~kOwnBlock, (entry.bytes & kOwnBlock) != 0);
    }
  }
}

bool in_tracked_call() noexcept { return t_in_call != 0; }
CallWords call_words() noexcept {
  uintptr_t thread_pointer;
  asm volatile("mov %%fs:0, %0" : "=r"(thread_pointer));
  return {static_cast<intptr_t>(reinterpret_cast<uintptr_t>(&t_in_call) - thread_pointer),
          static_cast<intptr_t>(reinterpret_cast<uintptr_t>(&t_stop_waiting) - thread_pointer)};
}

bool tracking() noexcept { return ready() && g_tracking; }

void jumping_to(const StackJump &jump) noexcept {
  if (t_in_call == 0 || !jump.leaves(t_call_frame)) return;
  t_in_call = 0;  // the calls nested in it are deeper still
  if (t_stop_waiting != 0) {
    t_stop_waiting = 0;
    park_after_deferred_stop();
  }
}

void start() noexcept {
  ready();
  if (!g_tracking) return;
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  g_program_uses_ours = real_dlsym()(RTLD_DEFAULT, "malloc") == reinterpret_cast<void *>(&::malloc);
  if (!g_program_uses_ours && __sanitizer_install_malloc_and_free_hooks != nullptr)
    g_hooks_installed = __sanitizer_install_malloc_and_free_hooks(sanitizer_malloc_hook, sanitizer_free_hook) != 0;
}

}  // namespace leaseguard::interpose::heap

// ---- the allocator entry points the program's calls reach ----

using namespace leaseguard::interpose::heap;

extern "C" {

__attribute__((visibility("default"))) void *malloc(size_t bytes) {
  if (!ready()) return bootstrap_allocate(bytes);
  if (!g_tracking) return g_next.malloc(bytes);
  TrackedCall call;
  if (call.nested()) return g_next.malloc(bytes);
  return track(g_next.malloc(bytes), bytes);
}

__attribute__((visibility("default"))) void free(void *pointer) {
  if (pointer == nullptr || from_bootstrap(pointer)) return;
  if (!ready() || !g_tracking) return g_next.free(pointer);
  TrackedCall call;
  if (call.nested()) return g_next.free(pointer);
  // Out of the table before the allocator may hand the address to another thread.
  erase(reinterpret_cast<uintptr_t>(pointer));
  g_next.free(pointer);
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t bytes) {
  if (!ready()) {
    size_t total;
    if (__builtin_mul_overflow(count, bytes, &total)) return nullptr;
    void *memory = bootstrap_allocate(total);
    if (memory != nullptr) std::memset(memory, 0, total);
    return memory;
  }
  if (!g_tracking) return g_next.calloc(count, bytes);
  TrackedCall call;
  if (call.nested()) return g_next.calloc(count, bytes);
  return track(g_next.calloc(count, bytes), count * bytes);
}

__attribute__((visibility("default"))) void *realloc(void *pointer, size_t bytes) {
  if (from_bootstrap(pointer)) {
    void *moved = malloc(bytes);
    if (moved != nullptr) std::memcpy(moved, pointer, std::min(bytes, bootstrap_size(pointer)));
    return moved;
  }
  if (!ready()) return bootstrap_allocate(bytes);
  if (!g_tracking) return g_next.realloc(pointer, bytes);
  // One tracked call from the old block to the new: no stop finds the contents in neither.
  TrackedCall call;
  if (call.nested()) return g_next.realloc(pointer, bytes);
  const size_t old_bytes = pointer != nullptr ? erase(reinterpret_cast<uintptr_t>(pointer)) : 0;
  void *moved = g_next.realloc(pointer, bytes);
  if (moved != nullptr) return track(moved, bytes);
  if (old_bytes != 0 && bytes != 0) insert(reinterpret_cast<uintptr_t>(pointer), old_bytes);  // failed: still live
  return nullptr;
}

__attribute__((visibility("default"))) void *reallocarray(void *pointer, size_t count, size_t bytes) {
  size_t total;
  if (__builtin_mul_overflow(count, bytes, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(pointer, total);
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t bytes) {
  if (!ready()) return nullptr;
  if (!g_tracking) return g_next.memalign(alignment, bytes);
  TrackedCall call;
  if (call.nested()) return g_next.memalign(alignment, bytes);
  return track(g_next.memalign(alignment, bytes), bytes);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t bytes) {
  if (!ready()) return nullptr;
  if (!g_tracking) return g_next.aligned_alloc(alignment, bytes);
  TrackedCall call;
  if (call.nested()) return g_next.aligned_alloc(alignment, bytes);
  return track(g_next.aligned_alloc(alignment, bytes), bytes);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t alignment, size_t bytes) {
  if (!ready()) return ENOMEM;
  if (!g_tracking) return g_next.posix_memalign(out, alignment, bytes);
  TrackedCall call;
  if (call.nested()) return g_next.posix_memalign(out, alignment, bytes);
  const int status = g_next.posix_memalign(out, alignment, bytes);
  if (status == 0) track(*out, bytes);
  return status;
}

__attribute__((visibility("default"))) void *valloc(size_t bytes) {
  if (!ready()) return nullptr;
  if (!g_tracking) return g_next.valloc(bytes);
  TrackedCall call;
  if (call.nested()) return g_next.valloc(bytes);
  return track(g_next.valloc(bytes), bytes);
}

__attribute__((visibility("default"))) void *pvalloc(size_t bytes) {
  if (!ready()) return nullptr;
  if (!g_tracking) return g_next.pvalloc(bytes);
  TrackedCall call;
  if (call.nested()) return g_next.pvalloc(bytes);
  return track(g_next.pvalloc(bytes), bytes);
}

}  // extern "C"
