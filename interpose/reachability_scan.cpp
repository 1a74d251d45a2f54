// The snapshot of reachability_scan.h. Everything the stopped phase needs is prepared
// before it, in memory of its own (mmap'd): while other threads are stopped one of them
// may hold the heap's, the loader's or stdio's lock.
#include "reachability_scan.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <csetjmp>
#include <csignal>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "background_thread.h"
#include "caller_stack.h"
#include "classification_turn.h"
#include "device_globals.h"
#include "driver_queries.h"
#include "event_clock.h"
#include "exit_order.h"
#include "heap_tracker.h"
#include "hook_table.h"
#include "journal_format.h"
#include "log.h"
#include "memory_headroom.h"
#include "memory_reader.h"
#include "program_mappings.h"
#include "preload_state.h"
#include "python_interpreter.h"
#include "python_pools.h"
#include "reachability.h"
#include "resident_pages.h"
#include "waiting_classifiers.h"
#include "scan_policy.h"
#include "resource_rules.h"
#include "tracker.h"
#include "world_stop.h"

namespace leaseguard::interpose {
namespace {

using reachability::Class;
using reachability::MemoryRange;
using reachability::Node;

// Memory of the scan's own: mmap'd in one piece, handed out in 8-byte aligned parts.
class Arena {
 public:
  explicit Arena(size_t bytes) noexcept : size_((bytes + 4095) & ~size_t{4095}) {
    void *memory = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = memory == MAP_FAILED ? nullptr : static_cast<char *>(memory);
    // Fewer page faults where the kernel gives huge pages on request.
    if (base_ != nullptr) madvise(base_, size_, MADV_HUGEPAGE);
  }
  // Faults in `bytes` at `part` now, before the threads are stopped: on a virtual machine a
  // page fault can cost microseconds, and the classifier's arrays take tens of thousands.
  static void populate(void *part, size_t bytes) noexcept {
    if (part == nullptr || bytes == 0) return;
#ifdef MADV_POPULATE_WRITE
    if (madvise(reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(part) & ~uintptr_t{4095}), bytes + 4096,
                MADV_POPULATE_WRITE) == 0)
      return;
#endif
    for (size_t at = 0; at < bytes; at += 4096) static_cast<volatile char *>(part)[at] = 0;
  }
  ~Arena() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  bool ok() const noexcept { return base_ != nullptr; }
  template <typename T>
  T *take(size_t count) noexcept {
    const size_t bytes = (count * sizeof(T) + 7) & ~size_t{7};
    if (base_ == nullptr || size_ - used_ < bytes) return nullptr;
    T *part = reinterpret_cast<T *>(base_ + used_);
    used_ += bytes;
    return part;
  }

 private:
  size_t size_;
  char *base_ = nullptr;
  size_t used_ = 0;
};

template <typename T>
struct Array {
  T *items = nullptr;
  size_t count = 0;
  size_t capacity = 0;
  bool take(Arena &arena, size_t n) noexcept {
    items = arena.take<T>(n);
    capacity = items != nullptr ? n : 0;
    return items != nullptr;
  }
  bool push(const T &item) noexcept {
    if (count == capacity) return false;
    items[count++] = item;
    return true;
  }
};

// Handles below this are told apart from small integers by nothing (the first pages are never
// mapped, so a driver's handles that are addresses lie above them).
constexpr uint64_t kLowestHandleValue = 65536;

// Device memory the CPU cannot read in place: read back through the driver.
bool read_in_place(Kind kind) noexcept {
  return kind == Kind::Host || kind == Kind::Managed || kind == Kind::Registered;
}

// Reads device memory back through the driver's own copy functions (not hooks), found once.
class DeviceReader {
 public:
  // `bytes` at `address`, of memory an entry point `api` handed out.
  bool read(Api api, uint64_t address, uint64_t bytes, void *into) noexcept {
    const auto *from = reinterpret_cast<const void *>(address);
    if (vendor_of(api) == Vendor::Hip) {
      if (hip_copy_ == nullptr) hip_copy_ = reinterpret_cast<HipCopy>(driver_symbol(anchor(api), "hipMemcpy"));
      constexpr int kDeviceToHost = 2;  // hipMemcpyDeviceToHost
      return hip_copy_ != nullptr && hip_copy_(into, from, bytes, kDeviceToHost) == 0;
    }
    if (cuda_copy_ == nullptr) cuda_copy_ = reinterpret_cast<CudaCopy>(driver_symbol(anchor(api), "cuMemcpyDtoH_v2"));
    return cuda_copy_ != nullptr && cuda_copy_(into, address, bytes) == CUDA_SUCCESS;
  }

 private:
  using HipCopy = int (*)(void *, const void *, size_t, int);
  using CudaCopy = CUresult (*)(void *, CUdeviceptr, size_t);
  static void *anchor(Api api) noexcept {
    return detail::g_real[static_cast<size_t>(api)].load(std::memory_order_acquire);
  }
  HipCopy hip_copy_ = nullptr;
  CudaCopy cuda_copy_ = nullptr;
};

constexpr size_t kMaxOwnerModules = 64;

struct ModuleRanges {
  Array<MemoryRange> *program;
  Array<MemoryRange> *allocator;  // the C library's: the program's, with its malloc state
  uintptr_t libc_base;
  Array<MemoryRange> *owner;
  Array<MemoryRange> *own;       // leaseguard's
  const uintptr_t *owner_bases;  // leaseguard's first, then the drivers'
  size_t owner_base_count;
  uintptr_t arena_module_address;  // inside a module whose mappings are not read, or 0
  MemoryRange *owner_extents;      // where each module lies whose mappings are not read
  size_t *owner_extent_count;
};

// Every module's writable segments (.data, .bss): the program's roots, or leaseguard's and
// the drivers' own where the module is one of theirs.
int add_module(dl_phdr_info *info, size_t, void *context) {
  auto &ranges = *static_cast<ModuleRanges *>(context);
  Array<MemoryRange> *roots = info->dlpi_addr == ranges.libc_base ? ranges.allocator : ranges.program;
  for (size_t i = 0; i < ranges.owner_base_count; ++i)
    if (ranges.owner_bases[i] == info->dlpi_addr) roots = i == 0 ? ranges.own : ranges.owner;
  MemoryRange extent{UINTPTR_MAX, 0};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD) {
      extent.begin = std::min<uintptr_t>(extent.begin, info->dlpi_addr + header.p_vaddr);
      extent.end = std::max<uintptr_t>(extent.end, info->dlpi_addr + header.p_vaddr + header.p_memsz);
    }
    if (header.p_type != PT_LOAD || (header.p_flags & PF_W) == 0) continue;
    const uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    roots->push(MemoryRange{begin, begin + header.p_memsz});
  }
  const bool programs = roots == ranges.program || roots == ranges.allocator;
  const bool unread_mappings =
      !programs || (ranges.arena_module_address >= extent.begin && ranges.arena_module_address < extent.end);
  if (unread_mappings && extent.begin < extent.end && *ranges.owner_extent_count < kMaxOwnerModules)
    ranges.owner_extents[(*ranges.owner_extent_count)++] = extent;
  return 0;
}

// The load bases of leaseguard's own module and of every driver (or shim) that a hook
// forwards to: their globals and what those reach are not the program's.
size_t owner_module_bases(uintptr_t *bases, size_t capacity) noexcept {
  size_t count = 0;
  auto add = [&](const void *address) {
    Dl_info info{};
    if (address == nullptr || dladdr(address, &info) == 0) return;
    const auto base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    for (size_t i = 0; i < count; ++i)
      if (bases[i] == base) return;
    // dli_fbase is the ELF header's address; dl_iterate_phdr's dlpi_addr is the load bias.
    // They agree for shared objects linked at 0, which drivers and leaseguard are.
    if (count < capacity) bases[count++] = base;
  };
  add(reinterpret_cast<const void *>(&classify_live_memory));
  for (size_t api = 1; api < static_cast<size_t>(Api::Count); ++api)
    add(detail::g_real[api].load(std::memory_order_acquire));
  // The drivers themselves, where a shim is what the hooks forward to.
  uintptr_t drivers[4];
  for (size_t i = 0, n = loaded_driver_bases(drivers, std::size(drivers)); i < n; ++i) {
    bool known = false;
    for (size_t j = 0; j < count; ++j) known = known || bases[j] == drivers[i];
    if (!known && count < capacity) bases[count++] = drivers[i];
  }
  return count;
}

// The process's mappings, read with plain system calls into `text`: the readable ones. Through
// /proc/thread-self: /proc/self names the main thread, whose maps read empty once it has
// called pthread_exit while other threads run on (then every root would be unread).
size_t read_mappings(char *text, size_t capacity, MemoryRange *out, size_t out_capacity) noexcept {
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/maps", O_RDONLY | O_CLOEXEC));
  if (fd < 0) fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  size_t used = 0;
  for (ssize_t got; used + 1 < capacity && (got = read(fd, text + used, capacity - 1 - used)) > 0;) used += got;
  close(fd);
  text[used] = '\0';
  size_t count = 0;
  for (char *line = text; *line != '\0' && count < out_capacity;) {
    char *end_of_line = std::strchr(line, '\n');
    char *dash = nullptr, *space = nullptr;
    const uintptr_t begin = std::strtoull(line, &dash, 16);
    const uintptr_t end = std::strtoull(dash + 1, &space, 16);
    if (space[1] == 'r') out[count++] = MemoryRange{begin, end};
    if (end_of_line == nullptr) break;
    line = end_of_line + 1;
  }
  return count;
}

const MemoryRange *mapping_containing(const MemoryRange *mappings, size_t count, uintptr_t address) noexcept {
  const MemoryRange *after = std::upper_bound(mappings, mappings + count, address,
                                              [](uintptr_t a, const MemoryRange &m) { return a < m.begin; });
  if (after == mappings) return nullptr;
  const MemoryRange *candidate = after - 1;
  return address < candidate->end ? candidate : nullptr;
}

// The size of the static TLS blocks below each thread pointer, from the loader (0: unknown).
size_t static_tls_bytes() noexcept {
  using Info = void (*)(size_t *, size_t *);
  auto info = reinterpret_cast<Info>(dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info"));
  size_t size = 0, align = 0;
  if (info != nullptr) info(&size, &align);
  return size;
}

// The thread control block and thread-specific data above the thread pointer (glibc's
// struct pthread: 2304 bytes on x86-64 in glibc 2.36; the mapping bounds it where smaller).
constexpr size_t kThreadBlockBytes = 4096;

uintptr_t thread_pointer() noexcept {
  uintptr_t pointer;
  asm volatile("mov %%fs:0, %0" : "=r"(pointer));
  return pointer;
}

constexpr size_t kMaxRoots = 65536, kMaxMappings = 262144, kMapsText = 32u << 20, kRunningStackBytes = 8u << 20;
// Runs of resident pages (resident_pages.h): a process whose memory is sparser than this has
// the rest read as unread (kReachabilityPagesUnread).
constexpr size_t kMaxResidentRuns = size_t{1} << 20;
// The registers of every thread a stop has room for, and this thread's first: one row each.
constexpr size_t kRegisterRows = kMaxStoppedThreads + 1;
static_assert(sizeof(ucontext_t::uc_mcontext.gregs) == kThreadRegisterWords * sizeof(uint64_t),
              "this thread's row is its ucontext's general registers");
// The program's own mappings are read up to this much in all (untouched pages read as zero,
// but each costs a fault): past it, one is read as holding no pointers, and the report says so.
constexpr uint64_t kMappingBytes = uint64_t{4} << 30;

struct Prepared {
  Array<Node> nodes;
  Array<MemoryRange> program_roots;
  Array<MemoryRange> owner_roots;
  Array<MemoryRange> own_roots;        // leaseguard's module's
  Array<MemoryRange> allocator_roots;  // the C library's globals (Snapshot::allocator_roots)
  Array<MemoryRange> mappings;
  Array<MemoryRange> resident;  // where memory may be read in place (resident_pages.h)
  char *maps_text = nullptr;
  size_t maps_capacity = 0;
  uint64_t *registers = nullptr;   // each stopped thread's, in a row: roots too
  char *running_stacks = nullptr;  // copies of the stacks of threads that could not be stopped
  size_t running_stacks_used = 0;
  MemoryRange owner_extents[kMaxOwnerModules];  // leaseguard's and the drivers' modules
  size_t owner_extent_count = 0;
  uint64_t mapping_budget = kMappingBytes;  // how much of the program's mappings may be read
  bool mappings_bounded = false;
  size_t device_nodes = 0;
  bool heap_overflow = false;
  bool roots_unread = false;                 // a thread's stack could not be found (/proc/self/maps unreadable)
  bool pages_unread = false;                 // memory swapped out or past the bounds: not read
  python_pools::Extent python_pools_module;  // whose arenas are read block by block; empty if none
  uint64_t python_int_type = 0;              // python_ints.h: Python ints read as pointers
  reachability::PythonIntLayout python_int_layout = reachability::PythonIntLayout::None;
  uint64_t python_object_offset = 0;
};

void add_block(void *context, uintptr_t address, size_t bytes, bool leaseguard_own) {
  auto &prepared = *static_cast<Prepared *>(context);
  Node node;
  node.address = address;
  node.bytes = bytes;
  node.contents = reinterpret_cast<const void *>(address);
  node.contents_bytes = bytes;
  node.leaseguard_own = leaseguard_own;
  if (!prepared.nodes.push(node)) prepared.heap_overflow = true;
}

// Python's object arenas: a node for each block in use, as for heap blocks, and for each pool
// that does not read as pymalloc's, the pool whole.
void add_pool_part(void *context, uintptr_t address, size_t bytes) { add_block(context, address, bytes, false); }

// A mapping the program made itself (program_mappings.h), as a node for each part of it that
// is readable now (mprotect may have split it). Those a driver or leaseguard made are theirs;
// Python's object arenas are read block by block, or not at all where its objects cannot be
// read (python_interpreter.h).
void add_mapping(void *context, const mappings::Mapping &mapping) {
  auto &prepared = *static_cast<Prepared *>(context);
  for (size_t i = 0; i < prepared.owner_extent_count; ++i)
    if (mapping.caller >= prepared.owner_extents[i].begin && mapping.caller < prepared.owner_extents[i].end) return;
  const MemoryRange *readable = prepared.mappings.items;
  const size_t count = prepared.mappings.count;
  // The readable mappings are in address order: the first that ends past the mapping's start.
  size_t at = std::partition_point(readable, readable + count,
                                   [&](const MemoryRange &range) { return range.end <= mapping.begin; }) -
              readable;
  const bool wholly_readable = at < count && readable[at].begin <= mapping.begin && readable[at].end >= mapping.end;
  if (wholly_readable && prepared.python_pools_module.contains(mapping.caller) &&
      python_pools::read_arena(mapping.begin, mapping.end, add_pool_part, add_pool_part, &prepared))
    return;
  for (; at < count && readable[at].begin < mapping.end; ++at) {
    Node node;
    node.address = std::max(mapping.begin, readable[at].begin);
    node.bytes = std::min(mapping.end, readable[at].end) - node.address;
    node.program_mapping = true;
    if (node.bytes <= prepared.mapping_budget) {
      node.contents = reinterpret_cast<const void *>(node.address);
      node.contents_bytes = node.bytes;
      prepared.mapping_budget -= node.bytes;
    } else {
      prepared.mappings_bounded = true;
    }
    if (!prepared.nodes.push(node)) prepared.heap_overflow = true;
  }
}

// Adds [begin, end) clamped to the readable mapping that holds `anchor`.
void add_clamped(Prepared &prepared, uintptr_t anchor, uintptr_t begin, uintptr_t end) noexcept {
  const MemoryRange *mapping = mapping_containing(prepared.mappings.items, prepared.mappings.count, anchor);
  if (mapping == nullptr) {
    prepared.roots_unread = true;
    return;
  }
  begin = std::max(begin, mapping->begin);
  end = std::min(end, mapping->end);
  if (begin < end) prepared.program_roots.push(MemoryRange{begin, end});
}

// The stack of a thread that could not be stopped, from the stack pointer the kernel reported
// for it: that thread runs on, and may return and have its stack unmapped while the scan
// reads. So the scan reads a copy, made with process_vm_readv, which fails where the memory
// is gone rather than fault. Past the room for copies, the part nearest the stack's top (the
// outer frames) is kept.
void add_running_stack(Prepared &prepared, uintptr_t stack_pointer) noexcept {
  const MemoryRange *mapping = mapping_containing(prepared.mappings.items, prepared.mappings.count, stack_pointer);
  if (mapping == nullptr) {
    prepared.roots_unread = true;
    return;
  }
  const uintptr_t end = mapping->end;
  const uintptr_t begin = std::max(stack_pointer - 128, mapping->begin);
  const size_t bytes = std::min<size_t>(end - begin, kRunningStackBytes - prepared.running_stacks_used);
  if (bytes == 0) return;
  char *copy = prepared.running_stacks + prepared.running_stacks_used;
  const size_t got = memory::copy(copy, end - bytes, bytes);
  if (got == 0) return;  // gone already: nothing on it is live
  prepared.running_stacks_used += (got + 7) & ~size_t{7};
  const auto at = reinterpret_cast<uintptr_t>(copy);
  prepared.program_roots.push(MemoryRange{at, at + got});
}

// A thread's static TLS and control block around its thread pointer. A thread that glibc
// made keeps them at the top of its stack mapping, which its stack's range covers already:
// the static TLS size the loader reports includes a surplus that would reach down into the
// dead part of that stack. The main thread's are a block of their own.
void add_thread_block(Prepared &prepared, uintptr_t stack_pointer, uintptr_t thread_pointer,
                      size_t tls_bytes) noexcept {
  const MemoryRange *stack = mapping_containing(prepared.mappings.items, prepared.mappings.count, stack_pointer);
  if (stack != nullptr && thread_pointer >= stack->begin && thread_pointer < stack->end) return;
  add_clamped(prepared, thread_pointer, thread_pointer - tls_bytes, thread_pointer + kThreadBlockBytes);
}

// Where the classifier may read in place: the present pages of the readable mappings, from
// the maps text the stopped phase read (resident_pages.h). Last, so that every copy the scan
// made of its own (registers, stacks) is written, and so present. Without the pagemap, nothing
// is read.
void find_resident_pages(Prepared &prepared) noexcept {
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/pagemap", O_RDONLY | O_CLOEXEC));
  if (fd < 0) fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  prepared.resident.count = 0;
  if (fd < 0) {
    prepared.pages_unread = true;
    return;
  }
  const ResidentPages found =
      resident_ranges(prepared.maps_text, fd, prepared.resident.items, prepared.resident.capacity);
  close(fd);
  prepared.resident.count = found.count;
  prepared.pages_unread = found.swapped || found.bounded;
}

// The stopped phase: roots of every thread and the heap's blocks, then the classification.
reachability::Statistics collect_and_classify(Prepared &prepared, const WorldStop &world, uintptr_t caller_frame,
                                              const CallerStack &caller, const ucontext_t &own_registers,
                                              size_t tls_bytes, void *scratch, size_t fixed_roots) noexcept {
  prepared.mappings.count =
      read_mappings(prepared.maps_text, prepared.maps_capacity, prepared.mappings.items, prepared.mappings.capacity);
  prepared.program_roots.count = fixed_roots;
  heap::for_each_block(add_block, &prepared);
  mappings::for_each(add_mapping, &prepared);
  // This thread: its stack from the program's first frame up, with the registers that frame
  // has (caller_stack.h). Where no program frame was found: from leaseguard's caller up,
  // with the registers as leaseguard was entered.
  if (caller_frame != 0 && caller.stack_unread) {
    // Its frames hold nothing of the program's (classify_lease): its thread-locals only.
    const uintptr_t tp = thread_pointer();
    add_clamped(prepared, tp, tp - tls_bytes, tp + kThreadBlockBytes);
  } else if (caller_frame != 0) {
    const uintptr_t stack_begin = caller.found ? caller.begin : caller_frame;
    if (caller.found) std::memcpy(prepared.registers, caller.registers, sizeof caller.registers);
    else std::memcpy(prepared.registers, own_registers.uc_mcontext.gregs, sizeof(StoppedThread::registers));
    const size_t register_bytes = caller.found ? sizeof caller.registers : sizeof(StoppedThread::registers);
    prepared.program_roots.push(MemoryRange{reinterpret_cast<uintptr_t>(prepared.registers),
                                            reinterpret_cast<uintptr_t>(prepared.registers) + register_bytes});
    add_clamped(prepared, stack_begin, stack_begin, UINTPTR_MAX);
    add_thread_block(prepared, stack_begin, thread_pointer(), tls_bytes);
  }
  for (size_t i = 0; i < world.count(); ++i) {
    const StoppedThread &thread = world.thread(i);
    uint64_t *registers = prepared.registers + (i + 1) * kThreadRegisterWords;
    const bool parked = world.parked(i);
    // A thread inside leaseguard on its way to classify: from where leaseguard's frames end
    // up, as this thread's own (waiting_classifiers.h).
    CallerStack waiting;
    if (parked && thread.registers_read && waiting_caller(thread.tid, waiting)) {
      if (waiting.found) std::memcpy(registers, waiting.registers, sizeof waiting.registers);
      else std::memcpy(registers, thread.registers, sizeof thread.registers);
      const size_t register_bytes = waiting.found ? sizeof waiting.registers : sizeof thread.registers;
      prepared.program_roots.push(
          MemoryRange{reinterpret_cast<uintptr_t>(registers), reinterpret_cast<uintptr_t>(registers) + register_bytes});
      add_clamped(prepared, waiting.begin, waiting.begin, UINTPTR_MAX);
      add_thread_block(prepared, waiting.begin, thread.thread_pointer, tls_bytes);
      continue;
    }
    if (parked && thread.registers_read) {
      std::memcpy(registers, thread.registers, sizeof thread.registers);
      prepared.program_roots.push(MemoryRange{reinterpret_cast<uintptr_t>(registers),
                                              reinterpret_cast<uintptr_t>(registers) + sizeof thread.registers});
      add_thread_block(prepared, thread.stack_pointer, thread.thread_pointer, tls_bytes);
    }
    // A leaf function's locals may sit in the 128-byte red zone below the stack pointer.
    if (thread.stack_pointer == 0) continue;
    if (parked) add_clamped(prepared, thread.stack_pointer, thread.stack_pointer - 128, UINTPTR_MAX);
    else add_running_stack(prepared, thread.stack_pointer);
  }
  find_resident_pages(prepared);
  reachability::Snapshot snapshot{prepared.program_roots.items, prepared.program_roots.count,
                                  prepared.owner_roots.items,   prepared.owner_roots.count,
                                  prepared.nodes.items,         prepared.nodes.count,
                                  prepared.own_roots.items,     prepared.own_roots.count};
  snapshot.allocator_roots = prepared.allocator_roots.items;
  snapshot.allocator_root_count = prepared.allocator_roots.count;
  snapshot.readable = prepared.resident.items;
  snapshot.readable_count = prepared.resident.count;
  snapshot.python_int_type = prepared.python_int_type;
  snapshot.python_int_layout = prepared.python_int_layout;
  snapshot.python_object_offset = prepared.python_object_offset;
  return reachability::classify(snapshot, scratch);
}

// While a thread that could not be stopped runs on, it can free a large heap block or unmap a
// mapping that the scan is reading: the read faults. The scan then reads under a SIGSEGV and
// SIGBUS handler of its own, which abandons the classification on the scanning thread (its
// allocations are then unchecked), and hands any other thread's fault to the program's action
// as the kernel would have. Installed only for such a scan, and the program's actions put
// back after it.
class FaultGuard {
 public:
  explicit FaultGuard(bool needed) noexcept {
    if (!needed) return;
    struct sigaction ours {};
    ours.sa_sigaction = on_fault;
    // SA_ONSTACK: a program that handles stack overflows on an alternate stack still can.
    ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    for (int i = 0; i < 2; ++i) installed_[i] = sigaction(kSignals[i], &ours, &g_program[i]) == 0;
    s_scanner = static_cast<pid_t>(syscall(SYS_gettid));
  }
  ~FaultGuard() {
    s_scanner = 0;
    for (int i = 0; i < 2; ++i)
      if (installed_[i]) sigaction(kSignals[i], &g_program[i], nullptr);
  }
  FaultGuard(const FaultGuard &) = delete;
  FaultGuard &operator=(const FaultGuard &) = delete;

  static sigjmp_buf s_recovery;

 private:
  static constexpr int kSignals[2] = {SIGSEGV, SIGBUS};
  static inline struct sigaction g_program[2] = {};
  static inline std::atomic<pid_t> s_scanner{0};
  bool installed_[2] = {false, false};

  static void on_fault(int signal_number, siginfo_t *info, void *context) {
    if (s_scanner.load(std::memory_order_acquire) == static_cast<pid_t>(syscall(SYS_gettid))) siglongjmp(s_recovery, 1);
    const struct sigaction &program = g_program[signal_number == SIGSEGV ? 0 : 1];
    if ((program.sa_flags & SA_SIGINFO) != 0) {
      program.sa_sigaction(signal_number, info, context);
    } else if (program.sa_handler == SIG_DFL) {
      // Returning re-runs the faulting instruction, which now meets the default action.
      signal(signal_number, SIG_DFL);
    } else if (program.sa_handler != SIG_IGN) {
      program.sa_handler(signal_number);
    }
  }
};
sigjmp_buf FaultGuard::s_recovery;

// Runs work(context); false if it faulted under a FaultGuard. Nothing lives across the jump.
__attribute__((noinline)) bool run_recoverably(void (*work)(void *), void *context) noexcept {
  if (sigsetjmp(FaultGuard::s_recovery, 0) != 0) return false;
  work(context);
  return true;
}

// The process's resident memory now, from /proc/self/statm (0 if unreadable).
size_t resident_bytes() noexcept {
  char text[128];
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  const ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  char *second = nullptr;
  std::strtoull(text, &second, 10);
  return static_cast<size_t>(std::strtoull(second, nullptr, 10)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// What a classification took, for its debug line.
struct Costs {
  uint64_t started_ns = 0;
  uint64_t stopping_ns = 0;
  uint64_t resumed_ns = 0;
  size_t resident_before = 0;
  size_t other_threads = 0;
  reachability::Statistics statistics;
};

size_t arena_bytes_for(size_t node_room, uint64_t device_bytes) noexcept {
  return node_room * sizeof(Node) + reachability::scratch_bytes(node_room) + 3 * kMaxRoots * sizeof(MemoryRange) +
         (kMaxMappings + kMaxResidentRuns) * sizeof(MemoryRange) + kMapsText +
         kRegisterRows * kThreadRegisterWords * sizeof(uint64_t) + kRunningStackBytes + device_bytes + 4096;
}

// Whether the memory the classification would take can be spared (scan_policy.h), and if not,
// says so.
bool memory_to_spare(size_t needed) noexcept {
  const uint64_t headroom = memory_headroom();
  if (reachability::fits_in_headroom(needed, headroom)) return true;
  // Once a process: with --reachability leases, every lease's end would say it again.
  static std::atomic<bool> warned{false};
  void (*say)(const char *, ...) noexcept = warned.exchange(true) ? log_debug : log_warning;
  say("classifying live allocations would take %.0f MiB, and this process may use only %.0f MiB more (its memory "
      "limit, or the machine's free memory), of which the classification takes at most half: they are reported "
      "unchecked",
      static_cast<double>(needed) / (1 << 20), static_cast<double>(headroom) / (1 << 20));
  return false;
}

// Hands out the arena's parts to `prepared`, faults in the ones the classifier fills, and
// returns the classifier's scratch memory; nullptr if the arena could not hold them.
void *lay_out(Arena &arena, Prepared &prepared, size_t node_room) noexcept {
  void *scratch = arena.take<uint64_t>(reachability::scratch_bytes(node_room) / 8 + 1);
  if (!arena.ok() || scratch == nullptr || !prepared.nodes.take(arena, node_room) ||
      !prepared.program_roots.take(arena, kMaxRoots) || !prepared.owner_roots.take(arena, kMaxRoots) ||
      !prepared.own_roots.take(arena, kMaxRoots) || !prepared.allocator_roots.take(arena, kMaxRoots) ||
      !prepared.mappings.take(arena, kMaxMappings) || !prepared.resident.take(arena, kMaxResidentRuns) ||
      (prepared.maps_text = arena.take<char>(kMapsText)) == nullptr ||
      (prepared.registers = arena.take<uint64_t>(kRegisterRows * kThreadRegisterWords)) == nullptr ||
      (prepared.running_stacks = arena.take<char>(kRunningStackBytes)) == nullptr)
    return nullptr;
  prepared.maps_capacity = kMapsText;
  Arena::populate(scratch, reachability::scratch_bytes(node_room));
  Arena::populate(prepared.nodes.items, node_room * sizeof(Node));
  return scratch;
}

// A node for each live allocation, its memory read back now (the driver cannot be called
// while the threads are stopped) within the bound. Returns journal::kReachability* flags.
uint32_t add_device_nodes(Prepared &prepared, Arena &arena, const std::vector<Tracker::LiveMemory> &live,
                          const Options &options, DeviceReader &device_copies, uint64_t &budget) noexcept {
  uint32_t flags = 0;
  for (const Tracker::LiveMemory &allocation : live) {
    Node node;
    node.address = allocation.address;
    node.bytes = std::max<uint64_t>(allocation.bytes, 1);
    node.allocation_id = allocation.id;
    if (space_of(allocation.api) != Space::Address) {
      // A handle (VMM physical memory, an array, a pool, external memory): held where the
      // program keeps its value, which it needs to free it; no pointer lies behind it that the
      // program could follow. A value below the first page could be any small integer: that
      // one stays unchecked.
      if (allocation.address < kLowestHandleValue) continue;
      node.bytes = 1;
    } else if (read_in_place(allocation.kind)) {
      node.contents = reinterpret_cast<const void *>(allocation.address);
      node.contents_bytes = allocation.bytes;
    } else if (allocation.bytes > options.device_scan_allocation_bytes || allocation.bytes > budget) {
      flags |= journal::kReachabilityDeviceBounded;
    } else if (void *copy = arena.take<char>(allocation.bytes); copy != nullptr) {
      if (device_copies.read(allocation.api, allocation.address, allocation.bytes, copy)) {
        node.contents = copy;
        node.contents_bytes = allocation.bytes;
        budget -= allocation.bytes;
      } else {
        flags |= journal::kReachabilityDeviceUnread;
      }
    }
    prepared.nodes.push(node);
  }
  prepared.device_nodes = prepared.nodes.count;
  return flags;
}

// The device memory a classification would read back: each live allocation within the
// per-allocation bound, and the modules' device globals, up to the total bound.
uint64_t device_bytes_to_read(const std::vector<Tracker::LiveMemory> &live, const Options &options) noexcept {
  uint64_t bytes = 0;
  for (const Tracker::LiveMemory &allocation : live)
    if (space_of(allocation.api) == Space::Address && !read_in_place(allocation.kind) &&
        allocation.bytes <= options.device_scan_allocation_bytes)
      bytes += allocation.bytes;
  try {
    for (const DeviceGlobal &global : device_globals())
      if (global.bytes <= options.device_scan_allocation_bytes) bytes += (global.bytes + 7) & ~uint64_t{7};
  } catch (...) {
    return options.device_scan_total_bytes;
  }
  return std::min(bytes, options.device_scan_total_bytes);
}

// The modules' global variables in device memory (device_globals.h), read back into one
// block of the arena: the program's roots, as its host globals are. They share the bounds of
// the device allocations' reading.
uint32_t add_device_global_roots(Prepared &prepared, Arena &arena, const Options &options, DeviceReader &device_copies,
                                 uint64_t &budget) noexcept {
  std::vector<DeviceGlobal> globals;
  try {
    globals = device_globals();
  } catch (...) {
    return journal::kReachabilityDeviceBounded;
  }
  uint32_t flags = 0;
  uint64_t total = 0;
  for (DeviceGlobal &global : globals) {
    const uint64_t rounded = (global.bytes + 7) & ~uint64_t{7};  // each starts 8-aligned
    if (global.bytes > options.device_scan_allocation_bytes || total + rounded > budget) {
      flags |= journal::kReachabilityDeviceBounded;
      global.bytes = 0;  // not read: as holding no pointers
      continue;
    }
    total += rounded;
  }
  if (total == 0) return flags;
  auto *copies = arena.take<char>(total);
  if (copies == nullptr) return flags | journal::kReachabilityDeviceBounded;
  uint64_t at = 0;
  for (const DeviceGlobal &global : globals) {
    if (global.bytes == 0) continue;
    if (!device_copies.read(global.located_by, global.address, global.bytes, copies + at)) {
      std::memset(copies + at, 0, global.bytes);
      flags |= journal::kReachabilityDeviceUnread;
    }
    at += (global.bytes + 7) & ~uint64_t{7};
  }
  budget -= total;
  const auto begin = reinterpret_cast<uintptr_t>(copies);
  prepared.program_roots.push(MemoryRange{begin, begin + total});
  return flags;
}

// What the classification took: bench/README.md quotes these lines (LEASEGUARD_LOG=debug).
void log_costs(const Prepared &prepared, const Costs &costs) noexcept {
  const reachability::Statistics &statistics = costs.statistics;
  const double stopped_ns = static_cast<double>(costs.resumed_ns - costs.stopping_ns);
  const size_t resident_now = resident_bytes();
  log_debug(
      "reachability: %zu node(s) (%zu device), %zu root range(s), %zu owned, %zu other thread(s); "
      "%llu owned block(s), %llu lost component(s); %.1f MiB scanned in %.1f ms stopped (%.2f GB/s); "
      "sort %.1f ms, floods %.1f ms (%.2f GB/s), lost %.1f ms; %.1f ms in all; %.1f MiB more resident",
      prepared.nodes.count, prepared.device_nodes, prepared.program_roots.count,
      prepared.owner_roots.count + prepared.own_roots.count, costs.other_threads,
      static_cast<unsigned long long>(statistics.owned_blocks),
      static_cast<unsigned long long>(statistics.lost_components),
      static_cast<double>(statistics.scanned_bytes) / (1 << 20), stopped_ns / 1e6,
      static_cast<double>(statistics.scanned_bytes) / (stopped_ns + 1), statistics.sort_ns / 1e6,
      statistics.flood_ns / 1e6,
      static_cast<double>(statistics.scanned_bytes) / static_cast<double>(statistics.flood_ns + 1),
      statistics.lost_ns / 1e6, static_cast<double>(costs.resumed_ns - costs.started_ns) / 1e6,
      static_cast<double>(resident_now - std::min(costs.resident_before, resident_now)) / (1 << 20));
}

// Journals each device allocation's class; where a thread could not be stopped, the heap
// was not tracked or a Python interpreter's objects could not be read, what was not
// found reachable is unchecked, never guessed lost.
void journal_classes(Tracker &tracker, const Prepared &prepared, uint32_t flags) noexcept {
  std::vector<std::pair<uint64_t, uint8_t>> classes;
  try {
    classes.reserve(prepared.device_nodes);
    for (size_t i = 0; i < prepared.nodes.count; ++i) {
      const Node &node = prepared.nodes.items[i];
      if (node.allocation_id == 0) continue;
      classes.emplace_back(node.allocation_id, static_cast<uint8_t>(reachability::reported_class(node.result, flags)));
    }
  } catch (...) {
    log_warning("no memory to journal the reachability of live allocations: they are reported unchecked");
    return;
  }
  keep_if_exit(classes, flags);
  tracker.write_reachability(classes, flags);
}

// Journals every live allocation unchecked, `flags` saying why (the classification did not run).
void journal_unchecked(Tracker &tracker, const std::vector<Tracker::LiveMemory> &live, uint32_t flags) noexcept {
  std::vector<std::pair<uint64_t, uint8_t>> classes;
  try {
    classes.reserve(live.size());
    for (const Tracker::LiveMemory &allocation : live)
      classes.emplace_back(allocation.id, static_cast<uint8_t>(Class::Unchecked));
  } catch (...) {
    return;
  }
  keep_if_exit(classes, flags);
  tracker.write_reachability(classes, flags);
}

std::atomic<pid_t> g_classified_in{0};  // the process whose exit classification ran

// The process's classification at its exit, once: from libc's exit handlers, or earlier,
// from Python's (python_interpreter.h).
__attribute__((noinline)) void classify_process_at_exit() {
  // A vfork child's exit() (or a clone(CLONE_VM) child's) is not its parent's: no stop of the
  // parent's threads, nothing written in the parent's memory or journal, the mark below included.
  Tracker *tracker = Tracker::instance();
  if (tracker == nullptr || !tracker->in_own_process()) return;
  if (g_classified_in.exchange(getpid()) == getpid()) return;
  // exit() from a signal handler that interrupted leaseguard on this thread: its locks may be
  // held below. Not classified (the live allocations are reported unchecked); preload_finish
  // says why.
  if (inside_leaseguard()) return;
  tracker->begin_exit();
  classify_live_memory(*tracker, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) + 16, Classifying::kAtExit);
}

void classify_at_exit(void *) { classify_process_at_exit(); }

}  // namespace

void arrange_classification_at_exit() noexcept {
  Tracker *tracker = Tracker::instance();
  if (tracker == nullptr || tracker->options().reachability == ReachabilityMode::Off) return;
  run_first_at_exit(classify_at_exit);
  python::classify_before_finalization(classify_process_at_exit);
}

void classify_at_process_exit() noexcept {
  Tracker *tracker = Tracker::instance();
  if (tracker != nullptr && tracker->options().reachability != ReachabilityMode::Off) classify_process_at_exit();
}

void classify_lease(Tracker &tracker, uint32_t lease_id, bool caller_done) noexcept {
  // A lease whose time-to-live runs out once the exit has begun ends with the exit
  // (Tracker::begin_exit); one that was already expiring meets the exit's classification in
  // classify_live_memory (classification_turn.h).
  pid_t own[BackgroundThread::kMaxRunning];
  const size_t own_count = BackgroundThread::running_thread_ids(own, std::size(own));
  const auto self = static_cast<pid_t>(syscall(SYS_gettid));
  bool on_own_thread = false;
  for (size_t i = 0; i < own_count; ++i) on_own_thread = on_own_thread || own[i] == self;
  classify_live_memory(tracker, on_own_thread ? 0 : reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) + 16,
                       Classifying::kWhileRunning, lease_id, caller_done);
}

namespace {

// Where the Python interpreter's objects are, for the scan. Python's object arenas hold freed
// objects' stale words beside live ones: read whole, they would make lost memory reachable.
// They are read block by block where the interpreter's objects live in them, and not at all
// where its objects cannot be read (`flags` then says so).
struct PythonObjects {
  uintptr_t unread_arenas_module = 0;
  python_pools::Extent pools_module;
  size_t blocks = 0;
};

PythonObjects find_python_objects(uint32_t &flags) noexcept {
  PythonObjects objects;
  if (python::objects_unreadable()) {
    flags |= journal::kReachabilityPythonObjectsUnread;
    objects.unread_arenas_module = reinterpret_cast<uintptr_t>(python::object_allocator());
  } else if (python::object_home() == python::ObjectHome::Pools) {
    objects.pools_module = python_pools::module_of(python::object_allocator());
    objects.blocks = python_pools::live_block_bound(objects.pools_module);
  }
  return objects;
}

// Globals of every module, sorted into the program's and the owners'.
void add_module_roots(Prepared &prepared, uintptr_t python_arenas_module) noexcept {
  uintptr_t owner_bases[kMaxOwnerModules];
  Dl_info libc{};
  const auto libc_base = dladdr(reinterpret_cast<void *>(&std::exit), &libc) != 0
                             ? reinterpret_cast<uintptr_t>(libc.dli_fbase)
                             : uintptr_t{0};
  ModuleRanges modules{&prepared.program_roots,
                       &prepared.allocator_roots,
                       libc_base,
                       &prepared.owner_roots,
                       &prepared.own_roots,
                       owner_bases,
                       owner_module_bases(owner_bases, std::size(owner_bases)),
                       python_arenas_module,
                       prepared.owner_extents,
                       &prepared.owner_extent_count};
  dl_iterate_phdr(add_module, &modules);
}

// What the stopped phase reads besides the prepared nodes and roots.
struct StoppedPhase {
  uintptr_t caller_frame;
  CallerStack caller;
  const ucontext_t *own_registers;
  size_t tls_bytes;
  void *scratch;
  size_t fixed_roots;
};

const char *not_stopped_text(NotStoppedReason reason) noexcept {
  switch (reason) {
    case NotStoppedReason::kTooMany: return "the process has more threads than one stop holds (16,384)";
    case NotStoppedReason::kAttachRefused:
      return "ptrace was refused for a thread (a debugger or strace holds the process, or seccomp or Yama forbids it)";
    case NotStoppedReason::kStuckInCall: return "a thread stayed inside a heap call for 5 seconds";
    case NotStoppedReason::kInConnect:
      return "a thread waited in connect(), which a stop would end with EINTR: it was not stopped";
    case NotStoppedReason::kNone: break;
  }
  return "a thread could not be stopped";
}

// Stops the program's threads, classifies, resumes them, and journals the classes.
void stop_and_classify(Tracker &tracker, Prepared &prepared, const StoppedPhase &phase, uint32_t flags,
                       Costs &costs) noexcept {
  pid_t own_threads[BackgroundThread::kMaxRunning];
  const size_t own_thread_count = BackgroundThread::running_thread_ids(own_threads, std::size(own_threads));
  costs.stopping_ns = monotonic_ns();
  WorldStop world;
  if (!world.stop(own_threads, own_thread_count)) {
    log_warning(
        "could not stop the program's threads (no memory, no task to trace them, or no descriptor to list them): "
        "live allocations are reported unchecked");
    journal_classes(tracker, prepared, flags | journal::kReachabilityThreadsNotStopped);
    return;
  }
  const bool threads_stopped = world.stopped_all();
  auto classify_now = [&] {
    costs.statistics = collect_and_classify(prepared, world, phase.caller_frame, phase.caller, *phase.own_registers,
                                            phase.tls_bytes, phase.scratch, phase.fixed_roots);
  };
  bool faulted = false;
  {
    FaultGuard guard(!threads_stopped);
    faulted = !run_recoverably([](void *work) { (*static_cast<decltype(classify_now) *>(work))(); }, &classify_now);
  }
  costs.other_threads = world.count();
  const NotStoppedReason why_not_stopped = world.reason();
  world.resume();
  costs.resumed_ns = monotonic_ns();
  log_costs(prepared, costs);
  if (!threads_stopped) log_info("%s: lost allocations are reported unchecked", not_stopped_text(why_not_stopped));

  if (faulted) {
    log_warning(
        "memory the scan was reading went away under it (a thread that could not be stopped freed or "
        "unmapped it): live allocations are reported unchecked");
    for (size_t i = 0; i < prepared.nodes.count; ++i) prepared.nodes.items[i].result = Class::Unchecked;
  }
  if (!threads_stopped || prepared.roots_unread) flags |= journal::kReachabilityThreadsNotStopped;
  if (!heap::complete() || !mappings::complete() || prepared.heap_overflow)
    flags |= journal::kReachabilityHeapUntracked;
  if (prepared.mappings_bounded) flags |= journal::kReachabilityMappingsBounded;
  if (prepared.pages_unread) flags |= journal::kReachabilityPagesUnread;
  journal_classes(tracker, prepared, flags);
}

}  // namespace

void classify_live_memory(Tracker &tracker, uintptr_t caller_frame, Classifying when, uint32_t lease_id,
                          bool caller_done) noexcept {
  if (tracker.options().reachability == ReachabilityMode::Off) return;
  // One classification at a time (classification_turn.h): a lease expiring on the watchdog
  // while the process exits. Until its turn, this thread says where leaseguard's frames on its
  // stack end, so that another classification meanwhile reads its stack from there
  // (waiting_classifiers.h).
  WaitingClassifier on_the_way(caller_frame);
  CallerStack caller = caller_frame != 0 ? find_caller_stack(caller_frame) : CallerStack{};
  caller.stack_unread = caller_done;
  on_the_way.refine(caller);
  ClassificationTurn turn;
  on_the_way.withdraw();  // classifying now (or not at all): its own stack is read as the caller's
  if (turn.after_exit()) {
    journal_exit_classes_of_lease(tracker, lease_id);
    return;
  }
  if (when == Classifying::kAtExit) turn.mark_exit();
  ucontext_t own_registers{};  // getcontext leaves some registers unset: never stale stack bytes
  getcontext(&own_registers);
  Costs costs;
  costs.started_ns = monotonic_ns();
  costs.resident_before = resident_bytes();
  std::vector<Tracker::LiveMemory> live = tracker.live_memory(lease_id);
  if (live.empty()) return;

  uint32_t flags = 0;
  const PythonObjects python_objects = find_python_objects(flags);
  // Everything the stopped phase uses, sized with room for the blocks and mappings other
  // threads make until they stop (more than that: the heap is reported incomplete).
  const Options &options = tracker.options();
  const size_t blocks = heap::live_blocks() + python_objects.blocks;
  const size_t node_room = reachability::node_room_for(blocks, mappings::count(), live.size());
  if (!memory_to_spare(reachability::resident_bytes_for(node_room, device_bytes_to_read(live, options)))) {
    journal_unchecked(tracker, live, flags | journal::kReachabilityMemoryShort);
    return;
  }
  Arena arena(arena_bytes_for(node_room, options.device_scan_total_bytes));
  Prepared prepared;
  prepared.python_pools_module = python_objects.pools_module;
  python::int_type(prepared.python_int_type, prepared.python_int_layout, prepared.python_object_offset);
  void *scratch = lay_out(arena, prepared, node_room);
  if (scratch == nullptr) {
    log_warning("no memory to classify live allocations: they are reported unchecked");
    journal_unchecked(tracker, live, flags | journal::kReachabilityMemoryShort);
    return;
  }
  DeviceReader device_copies;
  uint64_t device_budget = options.device_scan_total_bytes;
  flags |= add_device_nodes(prepared, arena, live, options, device_copies, device_budget);
  flags |= add_device_global_roots(prepared, arena, options, device_copies, device_budget);
  add_module_roots(prepared, python_objects.unread_arenas_module);
  const StoppedPhase phase{caller_frame,       caller,  &own_registers,
                           static_tls_bytes(), scratch, prepared.program_roots.count};
  // The copies of the addresses must not be found as the program's: freed before the stop.
  std::vector<Tracker::LiveMemory>().swap(live);
  stop_and_classify(tracker, prepared, phase, flags, costs);
}

}  // namespace leaseguard::interpose
