// The preload's mmap, mmap64, munmap and mremap: each forwards to the C library's, then keeps
// the table of anonymous readable mappings (program_mappings.h). A change to the table is a
// tracked call (heap_tracker.h): the world stop never sees it half made.
#include "program_mappings.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstring>

#include "heap_tracker.h"
#include "real_dlsym.h"
#include "spin_lock.h"

// The preload's own ELF header, placed by the linker.
extern "C" const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

namespace leaseguard::interpose::mappings {
namespace {

// Whether `caller` is leaseguard's own code: its mappings (the journal's, the heap table's,
// the scan's) never concern the program, and leaseguard maps memory inside its tracked calls,
// where a change to the table would count as nested. Read from the preload's own program
// headers: no lock, no call into the C library.
bool made_by_leaseguard(uintptr_t caller) noexcept {
  static std::atomic<uintptr_t> own_end{0};
  const auto begin = reinterpret_cast<uintptr_t>(&__ehdr_start);
  uintptr_t end = own_end.load(std::memory_order_relaxed);
  if (end == 0) {
    const auto *headers = reinterpret_cast<const ElfW(Phdr) *>(begin + __ehdr_start.e_phoff);
    uintptr_t first = UINTPTR_MAX, last = 0;
    for (int i = 0; i < __ehdr_start.e_phnum; ++i) {
      if (headers[i].p_type != PT_LOAD) continue;
      first = std::min<uintptr_t>(first, headers[i].p_vaddr);
      last = std::max<uintptr_t>(last, headers[i].p_vaddr + headers[i].p_memsz);
    }
    end = begin + (last - first);
    own_end.store(end, std::memory_order_relaxed);
  }
  return caller >= begin && caller < end;
}

using MmapFunction = void *(*)(void *, size_t, int, int, int, off_t);
using MunmapFunction = int (*)(void *, size_t);
using MremapFunction = void *(*)(void *, size_t, size_t, int, ...);

// Found on first use: libraries map memory from their constructors, before the preload's.
template <typename Function>
Function next(std::atomic<Function> &slot, const char *name) noexcept {
  Function found = slot.load(std::memory_order_acquire);
  if (__builtin_expect(found == nullptr, false)) {
    found = real_symbol<Function>(RTLD_NEXT, name);
    slot.store(found, std::memory_order_release);
  }
  return found;
}
std::atomic<MmapFunction> g_mmap{nullptr};
std::atomic<MunmapFunction> g_munmap{nullptr};
std::atomic<MremapFunction> g_mremap{nullptr};

// The table: mappings in descending address order, never overlapping (a new one first takes
// out what it covers), so that a lookup is a binary search, and the common order of mmap's
// addresses (each below the last) appends. In memory of its own, grown by doubling: past its
// largest, some are missed.
constexpr size_t kFirstCapacity = 1024, kMaxCapacity = size_t{1} << 20;  // 24 MiB at most
SpinLock g_lock;
Mapping *g_table = nullptr;
size_t g_count = 0;
size_t g_capacity = 0;
std::atomic<bool> g_missed{false};

uintptr_t page_end(uintptr_t begin, size_t bytes) noexcept {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return (begin + bytes + page - 1) & ~(page - 1);
}

// Room for one more; false (and the table counts as incomplete) where there can be none.
bool room_for_one() noexcept {
  if (g_count < g_capacity) return true;
  const size_t capacity = g_capacity == 0 ? kFirstCapacity : g_capacity * 2;
  // From the kernel directly, as the heap table's memory (heap_tracker.cpp): looking the next
  // mmap or munmap up here, inside a tracked call, would make dlsym's free a nested heap call.
  void *memory = capacity > kMaxCapacity
                     ? MAP_FAILED
                     : reinterpret_cast<void *>(syscall(SYS_mmap, nullptr, capacity * sizeof(Mapping),
                                                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (memory == MAP_FAILED) {
    g_missed.store(true, std::memory_order_relaxed);
    return false;
  }
  if (g_table != nullptr) {
    std::memcpy(memory, g_table, g_count * sizeof(Mapping));
    syscall(SYS_munmap, g_table, g_capacity * sizeof(Mapping));
  }
  g_table = static_cast<Mapping *>(memory);
  g_capacity = capacity;
  return true;
}

// The first mapping (in the table's descending order) that begins below `address`.
size_t first_below(uintptr_t address) noexcept {
  return std::partition_point(g_table, g_table + g_count, [&](const Mapping &m) { return m.begin >= address; }) -
         g_table;
}

void insert_at(size_t at, const Mapping &mapping) noexcept {
  std::memmove(g_table + at + 1, g_table + at, (g_count - at) * sizeof(Mapping));
  g_table[at] = mapping;
  ++g_count;
}

// A mapping nothing recorded overlaps (forget() first).
void add(const Mapping &mapping) noexcept {
  if (!room_for_one()) return;
  insert_at(first_below(mapping.end), mapping);
}

// Takes [begin, end) out of the table: whole mappings go, partly covered ones are cut.
void forget(uintptr_t begin, uintptr_t end) noexcept {
  // The overlapped ones are a run: from the first that begins below `end` (it may reach past
  // it) to the last that ends past `begin` (it may begin before it).
  const size_t first = first_below(end);
  size_t last = first;
  while (last < g_count && g_table[last].end > begin) ++last;
  if (first == last) return;
  const Mapping high = g_table[first], low = g_table[last - 1];
  Mapping kept[2];
  size_t kept_count = 0;
  if (high.end > end) kept[kept_count++] = Mapping{end, high.end, high.caller};
  if (low.begin < begin) kept[kept_count++] = Mapping{low.begin, begin, low.caller};
  const size_t removed = last - first;
  if (kept_count > removed) {  // one mapping cut in two: its upper part stays in its place
    g_table[first] = kept[0];
    if (room_for_one()) insert_at(first + 1, kept[1]);
    return;
  }
  std::memcpy(g_table + first, kept, kept_count * sizeof(Mapping));
  std::memmove(g_table + first + kept_count, g_table + last, (g_count - last) * sizeof(Mapping));
  g_count -= removed - kept_count;
}

const Mapping *containing(uintptr_t address) noexcept {
  const size_t at = first_below(address + 1);
  return at < g_count && g_table[at].end > address ? &g_table[at] : nullptr;
}

// A forked child has only the forking thread: a lock another thread held stays held.
void after_fork_in_child() noexcept {
  if (g_lock.try_lock()) {
    g_lock.unlock();
    return;
  }
  g_lock.unlock();
  g_missed.store(true, std::memory_order_relaxed);
}

// One change to the table, as a tracked call; nothing if reachability is off. A call nested in
// another (a signal handler's) leaves the table alone, and the table counts as incomplete.
template <typename Change>
void change_table(Change change) noexcept {
  if (!heap::tracking()) return;
  // Registered before the tracked call: registering may allocate, and an allocation inside a
  // tracked call would count as nested.
  static const bool fork_handled = pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
  (void)fork_handled;
  if (heap::begin_tracked_call()) {
    g_lock.lock();
    change();
    g_lock.unlock();
  } else {
    g_missed.store(true, std::memory_order_relaxed);
  }
  heap::end_tracked_call();
}

void *map(void *address, size_t bytes, int protection, int flags, int fd, off_t offset, uintptr_t caller) noexcept {
  void *result = next(g_mmap, "mmap")(address, bytes, protection, flags, fd, offset);
  if (result == MAP_FAILED || made_by_leaseguard(caller)) return result;
  const auto begin = reinterpret_cast<uintptr_t>(result);
  const bool kept = (flags & MAP_ANONYMOUS) != 0 && (protection & PROT_READ) != 0;
  change_table([&] {
    forget(begin, page_end(begin, bytes));  // a fixed mapping replaces what was there
    if (kept) add(Mapping{begin, page_end(begin, bytes), caller});
  });
  return result;
}

}  // namespace

void for_each(void (*visit)(void *, const Mapping &), void *context) noexcept {
  for (size_t i = 0; i < g_count; ++i) visit(context, g_table[i]);
}

void for_each_locked(void (*visit)(void *, const Mapping &), void *context) noexcept {
  if (heap::begin_tracked_call()) {
    g_lock.lock();
    for_each(visit, context);
    g_lock.unlock();
  }
  heap::end_tracked_call();
}

bool find(uintptr_t address, Mapping &found) noexcept {
  bool got = false;
  if (heap::begin_tracked_call()) {
    g_lock.lock();
    if (const Mapping *mapping = containing(address)) {
      found = *mapping;
      got = true;
    }
    g_lock.unlock();
  }
  heap::end_tracked_call();
  return got;
}

size_t count() noexcept { return __atomic_load_n(&g_count, __ATOMIC_RELAXED); }

bool complete() noexcept { return !g_missed.load(std::memory_order_relaxed); }

}  // namespace leaseguard::interpose::mappings

using namespace leaseguard::interpose::mappings;

extern "C" {

__attribute__((visibility("default"))) void *mmap(void *address, size_t bytes, int protection, int flags, int fd,
                                                  off_t offset) {
  return map(address, bytes, protection, flags, fd, offset, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

__attribute__((visibility("default"))) void *mmap64(void *address, size_t bytes, int protection, int flags, int fd,
                                                    off_t offset) {
  return map(address, bytes, protection, flags, fd, offset, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

__attribute__((visibility("default"))) int munmap(void *address, size_t bytes) {
  if (made_by_leaseguard(reinterpret_cast<uintptr_t>(__builtin_return_address(0))))
    return next(g_munmap, "munmap")(address, bytes);
  const auto begin = reinterpret_cast<uintptr_t>(address);
  // Out of the table first: until the call returns, the range is still the caller's, and no
  // other mapping can take its place and be forgotten by mistake.
  change_table([&] { forget(begin, page_end(begin, bytes)); });
  return next(g_munmap, "munmap")(address, bytes);
}

__attribute__((visibility("default"))) void *mremap(void *old_address, size_t old_bytes, size_t new_bytes, int flags,
                                                    ...) {
  void *new_address = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list arguments;
    va_start(arguments, flags);
    new_address = va_arg(arguments, void *);
    va_end(arguments);
  }
  void *result = next(g_mremap, "mremap")(old_address, old_bytes, new_bytes, flags, new_address);
  if (result == MAP_FAILED || made_by_leaseguard(reinterpret_cast<uintptr_t>(__builtin_return_address(0))))
    return result;
  const auto old_begin = reinterpret_cast<uintptr_t>(old_address);
  const auto begin = reinterpret_cast<uintptr_t>(result);
  change_table([&] {
    const Mapping *old = containing(old_begin);
    const bool kept = old != nullptr;
    const uintptr_t caller = kept ? old->caller : 0;
    if ((flags & MREMAP_DONTUNMAP) == 0) forget(old_begin, page_end(old_begin, old_bytes));
    forget(begin, page_end(begin, new_bytes));
    if (kept) add(Mapping{begin, page_end(begin, new_bytes), caller});
  });
  return result;
}

}  // extern "C"
