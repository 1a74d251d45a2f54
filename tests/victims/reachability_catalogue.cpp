// Device memory held, lost and hidden in every way the reachability scan must tell apart.
// Each case allocates its own size (below), so the test can find it in the report and
// assert its class. Modes: (none) the catalogue and a forked child; "kill": one held and
// one dropped allocation, then SIGKILL; "gate": held memory only, plus one dropped
// allocation if a second argument "drop" is given; "lease": one held and one dropped
// allocation in an explicit lease, which ends before the process does; "ttl": one held and
// one dropped allocation in the process lease, whose time-to-live (--ttl, with --on-expiry
// reclaim) ends while the program runs: it waits for the expiry's reclaim to give the memory
// back, then exits 0 (77: it started too late to be sure its allocations came before expiry);
// "handles": arrays, VMM physical memory and pools, each once with its handle kept in a
// global and once with it dropped; "exit_path" and "main_returns": copies of a dropped
// allocation left in the dead stack that the exit path's frames come to occupy, by exit()
// (exit_over_stale_copies) and by main's return (copies in main's own frame);
// "signal_action": a held block whose address the bytes of a SIGTERM action's mask that the
// kernel never reads also hold (install_action_over_stale_bytes); "dirty_heap": the driver
// set up over freed blocks that held a held block's address (drive_over_a_dirty_heap);
// "mappings": device memory held only in anonymous memory the program mapped itself
// (hold_in_own_mappings); "many_mappings": the same among 40,000 mappings, half unmapped since
// (hold_in_many_mappings); "reused_address": a held block made where device memory freed
// just before lay (hold_where_device_memory_was).
//
// Built with CATALOGUE_HOST, the same catalogue allocates host memory with malloc, for
// LeakSanitizer to classify side by side (the cases only device memory has are left out).
// Its check runs where leaseguard's does: at exit, before the static destructors of what
// was constructed before the first allocation.
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#ifdef CATALOGUE_HOST
#include <sanitizer/lsan_interface.h>
using CUdeviceptr = uintptr_t;
#define CHECK(call) (call)
#else
#include "victim.h"
#endif
#include <leaseguard/annotate.h>

namespace {

// Sizes: reachable cases 1001..1099, indirect 2001..2099, direct 3001..3099.
enum Size : size_t {
  kGlobal = 1001,
  kStaticLocal = 1002,
  kHeapStruct = 1003,
  kVector = 1004,
  kMap = 1005,
  kTls = 1006,
  kInterior = 1007,
  kBlockedStack = 1008,
  kSpinningRegister = 1009,
  kInReachableDevice = 1010,
  kReachableTable = 1011,
  kChildGlobal = 1012,
  kHeldArray = 1013,
  kHeldByCallerOfExit = 1014,
  kInCallerOfExitRegister = 1015,
  kLazyStatic = 1016,
  kThreadLocalVector = 1017,
  kBesideSignalAction = 1018,
  kOverADirtyHeap = 1019,
  kInProgramMapping = 1020,
  kPastAHoleInAMapping = 1021,
  kInAMovedMapping = 1022,
  kInOneOfManyMappings = 1023,
  kBelowAFixedMapping = 1024,
  kAboveAFixedMapping = 1025,
  kWhereDeviceMemoryWas = 1026,
  kInLostDevice = 2001,
  kInLostHost = 2002,
  kCycleSecond = 2003,
  kInLostMapping = 2004,
  kInLostOneOfMany = 2005,
  kInAFixedMapping = 2006,
  kLostTable = 3001,
  kDisguised = 3002,
  kOnlyInFreedHost = 3003,
  kOnlyInDriverTables = 3004,
  kCycleFirst = 3005,
  kDropped = 3006,
  kChildDropped = 3007,
  kDroppedArray = 3008,
  kStaleCopies = 3009,
  kInUnmappedMapping = 3010,
};

// Held with external linkage and `used`: a global written and never read again is what
// an optimizer deletes, and with it the only pointer to the memory.
#define HELD __attribute__((used))
struct Cache {
  int generation;
  CUdeviceptr blocks[4];
};
}  // namespace

#ifndef CATALOGUE_HOST
HELD CUcontext g_context;  // the program holds its context: the driver's tables hang from it
#endif
HELD CUdeviceptr g_global;
HELD Cache *g_cache;
HELD std::vector<CUdeviceptr> g_vector;
HELD std::unordered_map<int, CUdeviceptr> g_map;
HELD thread_local CUdeviceptr t_tls;
HELD thread_local std::vector<CUdeviceptr> t_cache;  // destroyed as the exiting thread runs exit()
HELD char *g_interior;
HELD CUdeviceptr g_table;  // device memory holding a device pointer
HELD CUdeviceptr *g_reused[8];
HELD uintptr_t g_disguised;
HELD void *volatile g_lost_host;  // cleared: the block it pointed to is lost

namespace {
sem_t g_threads_ready;

#ifdef CATALOGUE_HOST
#define VICTIM_NOINLINE __attribute__((noinline, noclone))
VICTIM_NOINLINE CUdeviceptr allocate(size_t bytes) {
  static bool first = true;
  if (first) std::atexit(__lsan_do_leak_check);
  first = false;
  return reinterpret_cast<CUdeviceptr>(std::calloc(1, bytes));
}
#else
VICTIM_NOINLINE CUdeviceptr allocate(size_t bytes) {
  CUdeviceptr pointer = 0;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
  return pointer;
}
#endif

// Overwrites the dead stack below the caller, where stale copies of dropped pointers lie.
VICTIM_NOINLINE void scrub_stack() {
  volatile char area[16384];
  for (size_t i = 0; i < sizeof area; ++i) area[i] = 0;
}

VICTIM_NOINLINE void static_local() {
  static volatile CUdeviceptr held = allocate(kStaticLocal);
  (void)held;
}

// A cache made on first use, after the first allocation: its destructor is registered after
// the exit classification's and would run before it, freeing the vector's buffer.
VICTIM_NOINLINE std::vector<CUdeviceptr> &lazy_cache() {
  static std::vector<CUdeviceptr> blocks;
  return blocks;
}

VICTIM_NOINLINE void store_pointer_in_device(CUdeviceptr table, CUdeviceptr pointer) {
#ifdef CATALOGUE_HOST
  std::memcpy(reinterpret_cast<void *>(table), &pointer, sizeof pointer);
#else
  CHECK(cuMemcpyHtoD_v2(table, &pointer, sizeof pointer));
#endif
}

VICTIM_NOINLINE void lose_device_table() {
  CUdeviceptr table = allocate(kLostTable);
  store_pointer_in_device(table, allocate(kInLostDevice));
}

VICTIM_NOINLINE void lose_host_struct() {
  auto *lost = static_cast<CUdeviceptr *>(std::malloc(64));
  lost[3] = allocate(kInLostHost);
  g_lost_host = lost;     // so the block and its store are kept
  g_lost_host = nullptr;  // the block leaks (LeakSanitizer's business); the device memory hangs from it
}

VICTIM_NOINLINE void leave_pointer_in_freed_host() {
  auto *block = static_cast<CUdeviceptr *>(std::malloc(256));
  block[20] = allocate(kOnlyInFreedHost);  // past what free() writes into the chunk
  g_lost_host = block;                     // so the store is kept
  g_lost_host = nullptr;
  std::free(block);
}

VICTIM_NOINLINE void lose_cycle() {
  CUdeviceptr first = allocate(kCycleFirst);
  CUdeviceptr second = allocate(kCycleSecond);
  store_pointer_in_device(first, second);
  store_pointer_in_device(second, first);
}

VICTIM_NOINLINE void drop(size_t bytes) { allocate(bytes); }

#ifndef CATALOGUE_HOST
size_t free_device_memory() {
  size_t free_bytes = 0, total = 0;
  CHECK(cuMemGetInfo_v2(&free_bytes, &total));
  return free_bytes;
}

// Milliseconds since this process started (the kernel's start time, in clock ticks), which
// is no later than when its process lease's time-to-live began.
long ms_since_process_start() {
  FILE *stat = std::fopen("/proc/self/stat", "r");
  if (stat == nullptr) return -1;
  char text[1024];
  const size_t length = std::fread(text, 1, sizeof text - 1, stat);
  std::fclose(stat);
  text[length] = '\0';
  const char *field = std::strrchr(text, ')');  // after the command name, which may hold spaces
  unsigned long long start_ticks = 0;
  // Fields 3 to 21, then 22: the start time.
  if (field == nullptr ||
      std::sscanf(field + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &start_ticks) != 1)
    return -1;
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  const long ticks = sysconf(_SC_CLK_TCK);
  return boot.tv_sec * 1000 + boot.tv_nsec / 1000000 - static_cast<long>(start_ticks * 1000 / ticks);
}

// Handles are held where their values are kept. Widths make each array's size its own.
CUarray create_array(size_t width) {
  CUDA_ARRAY_DESCRIPTOR descriptor;
  std::memset(&descriptor, 0, sizeof descriptor);
  descriptor.Width = width;
  descriptor.Height = 1;
  descriptor.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  descriptor.NumChannels = 1;
  CUarray array = nullptr;
  CHECK(cuArrayCreate_v2(&array, &descriptor));
  return array;
}

CUmemGenericAllocationHandle create_physical(size_t granules) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle handle = 0;
  CHECK(cuMemCreate(&handle, granules * granularity, &prop, 0));
  return handle;
}

CUmemoryPool create_pool() {
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  CHECK(cuMemPoolCreate(&pool, &props));
  return pool;
}

struct Handles {
  CUarray array;
  CUmemGenericAllocationHandle physical;
  CUmemoryPool pool;
};
HELD Handles g_handles;

VICTIM_NOINLINE void drop_handles() {
  create_array(kDroppedArray);
  create_physical(2);
  create_pool();
}

int keep_and_drop_handles() {
  g_handles.array = create_array(kHeldArray);
  g_handles.physical = create_physical(1);
  g_handles.pool = create_pool();
  drop_handles();
  scrub_stack();
  return 0;
}

// The process lease expires while this runs (--ttl 2s --on-expiry reclaim): classified then.
int outlive_the_process_lease() {
  const size_t before = free_device_memory();
  g_global = allocate(kGlobal);
  drop(kDropped);
  scrub_stack();
  // Both allocations must be the expired lease's: made well within its time-to-live.
  const long elapsed = ms_since_process_start();
  if (elapsed < 0 || elapsed > 1000) return 77;
  // The expiry classifies them, reports, then reclaims both: the memory comes back.
  const timespec pause = {0, 1000000};
  while (free_device_memory() < before) nanosleep(&pause, nullptr);
  return 0;
}
#endif

void set_context() {
#ifndef CATALOGUE_HOST
  CHECK(cuCtxSetCurrent(g_context));
#endif
}

void *blocked_thread(void *) {
  set_context();
  volatile CUdeviceptr held = allocate(kBlockedStack);
  (void)held;
  sem_post(&g_threads_ready);
  int never[2];
  if (pipe(never) == 0) {
    char byte;
    while (read(never[0], &byte, 1) != 0) {  // blocks until the process exits
    }
  }
  return nullptr;
}

VICTIM_NOINLINE uint64_t allocate_and_forget_where(size_t bytes = kSpinningRegister) {
  volatile CUdeviceptr pointer = allocate(bytes);
  const uint64_t value = pointer;
  pointer = 0;
  return value;
}

void *spinning_thread(void *) {
  set_context();
  register uint64_t held asm("r12") = allocate_and_forget_where();
  asm volatile("" : "+r"(held));
  scrub_stack();
  asm volatile("" : "+r"(held));
  sem_post(&g_threads_ready);
  for (;;) asm volatile("pause" : "+r"(held));  // the only copy: r12
  return nullptr;
}

void start_thread(void *(*body)(void *)) {
  pthread_t thread;
  if (pthread_create(&thread, nullptr, body, nullptr) != 0) std::exit(4);
  pthread_detach(thread);
  sem_wait(&g_threads_ready);
}

void catalogue() {
  g_global = allocate(kGlobal);
  static_local();
  g_cache = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
  g_cache->blocks[2] = allocate(kHeapStruct);
  g_vector.push_back(0);
  g_vector.push_back(allocate(kVector));
  g_map[7] = allocate(kMap);
  lazy_cache().push_back(allocate(kLazyStatic));
  t_cache.push_back(allocate(kThreadLocalVector));
  t_tls = allocate(kTls);
  g_interior = reinterpret_cast<char *>(allocate(kInterior)) + 100;
  g_table = allocate(kReachableTable);
  store_pointer_in_device(g_table, allocate(kInReachableDevice));
  lose_device_table();
  lose_host_struct();
  g_disguised = allocate(kDisguised) ^ 0x5a5a5a5a5a5a5a5aull;
  leave_pointer_in_freed_host();
#ifndef CATALOGUE_HOST
  drop(kOnlyInDriverTables);
#endif
  lose_cycle();
  drop(kDropped);
  start_thread(blocked_thread);
  start_thread(spinning_thread);
}

#ifndef CATALOGUE_HOST
HELD CUdeviceptr *g_slab;    // a mapping of the program's own
HELD CUdeviceptr *g_beyond;  // the third page of a mapping whose second was unmapped
HELD CUdeviceptr *g_moved;   // a mapping grown by mremap, which moved it

// "mappings": memory from mmap is no heap block, and LeakSanitizer reads none of it; device
// memory a program keeps in its own arenas or slabs must still be found held.
VICTIM_NOINLINE int hold_in_own_mappings() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto map = [](size_t bytes) {
    void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) std::exit(20);
    return static_cast<CUdeviceptr *>(memory);
  };
  g_slab = map(1 << 20);
  g_slab[1000] = allocate(kInProgramMapping);

  CUdeviceptr *three = map(3 * page);
  g_beyond = three + 2 * page / sizeof(CUdeviceptr);
  g_beyond[5] = allocate(kPastAHoleInAMapping);
  if (munmap(reinterpret_cast<char *>(three) + page, page) != 0) return 21;

  CUdeviceptr *small = map(page);
  small[7] = allocate(kInAMovedMapping);
  void *grown = mremap(small, page, 64 * page, MREMAP_MAYMOVE);
  if (grown == MAP_FAILED) return 22;
  g_moved = static_cast<CUdeviceptr *>(grown);

  CUdeviceptr *lost = map(page);  // nothing points to it once this frame is gone
  lost[9] = allocate(kInLostMapping);

  CUdeviceptr *unmapped = map(page);
  unmapped[11] = allocate(kInUnmappedMapping);
  if (munmap(unmapped, page) != 0) return 23;
  return 0;
}

HELD CUdeviceptr **g_many;        // one-page mappings, every other one unmapped since
HELD CUdeviceptr *g_below_fixed;  // the first of three pages whose middle one was mapped over
HELD CUdeviceptr *g_above_fixed;  // and the third

// "many_mappings": more mappings than programs usually keep (an interpreter's arenas in a
// process of many gigabytes), made and unmapped in turn, and a mapping cut in three by a
// MAP_FIXED one: each part is still found where it is.
VICTIM_NOINLINE int hold_in_many_mappings() {
  constexpr size_t kMappings = 40000;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto map = [](void *at, size_t bytes, int flags) {
    return static_cast<CUdeviceptr *>(
        mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0));
  };
  g_many = static_cast<CUdeviceptr **>(std::calloc(kMappings, sizeof(CUdeviceptr *)));
  if (g_many == nullptr) return 30;
  for (size_t i = 0; i < kMappings; ++i)
    if ((g_many[i] = map(nullptr, page, 0)) == MAP_FAILED) return 31;
  for (size_t i = 1; i < kMappings; i += 2) {
    if (munmap(g_many[i], page) != 0) return 32;
    g_many[i] = nullptr;
  }
  g_many[kMappings - 2][3] = allocate(kInOneOfManyMappings);
  g_many[kMappings / 2][1] = allocate(kInLostOneOfMany);
  g_many[kMappings / 2] = nullptr;  // the mapping stays, and nothing points to it

  CUdeviceptr *three = map(nullptr, 3 * page, 0);
  if (three == MAP_FAILED) return 33;
  CUdeviceptr *middle = three + page / sizeof(CUdeviceptr);
  if (map(middle, page, MAP_FIXED) != middle) return 34;
  g_below_fixed = three;
  g_above_fixed = three + 2 * page / sizeof(CUdeviceptr);
  g_below_fixed[4] = allocate(kBelowAFixedMapping);
  g_above_fixed[6] = allocate(kAboveAFixedMapping);
  middle[8] = allocate(kInAFixedMapping);  // nothing points to the middle page
  return 0;
}

// Drops an allocation whose copies stay in the dead stack below the caller: where the exit
// path's frames (exit, the handlers' runner, leaseguard's handler) lie once the caller calls
// exit().
VICTIM_NOINLINE void leave_stale_copies() {
  volatile CUdeviceptr copies[512];
  const CUdeviceptr dropped = allocate(kStaleCopies);
  for (auto &copy : copies) copy = dropped;
}

// "exit_path": calls exit() holding one allocation in its frame and one only in %rbx, which
// the exit path saves in its own frames, with copies of a dropped one below.
[[noreturn]] VICTIM_NOINLINE void exit_over_stale_copies() {
  g_global = allocate(kGlobal);
  volatile CUdeviceptr held = allocate(kHeldByCallerOfExit);
  register uint64_t in_register asm("rbx") = allocate_and_forget_where(kInCallerOfExitRegister);
  asm volatile("" : "+r"(in_register));
  scrub_stack();
  leave_stale_copies();
  asm volatile("" : "+r"(in_register));
  (void)held;
  std::exit(0);
}

// "signal_action": installs a SIGTERM handler from a `struct sigaction` built on the stack,
// as programs build it. glibc's sigemptyset clears only the mask's first word; the rest keeps
// what the stack held before, here copies of a held block's address. The block must stay
// the program's, with the allocation it holds.
void on_sigterm(int) {}

VICTIM_NOINLINE int install_action_over_stale_bytes() {
  g_cache = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
  g_cache->blocks[0] = allocate(kBesideSignalAction);
  struct sigaction action;
  for (size_t at = 0; at + sizeof g_cache <= sizeof action; at += sizeof g_cache)
    std::memcpy(reinterpret_cast<char *>(&action) + at, &g_cache, sizeof g_cache);
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  if (sigaction(SIGTERM, &action, nullptr) != 0) return 2;
  scrub_stack();
  return 0;
}
#endif

#ifndef CATALOGUE_HOST
// "dirty_heap": the program fills blocks of many sizes with a held block's address and frees
// them, then starts the driver, whose objects and tables the allocator makes from that
// memory. What the driver does not write of them (padding, a container's spare room) keeps
// the address: the driver's memory must not make the block its own.
VICTIM_NOINLINE int drive_over_a_dirty_heap() {
  g_cache = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
  std::vector<void *> dirty;
  for (size_t round = 0; round < 2; ++round)
    for (size_t bytes = 16; bytes <= 16384; bytes += 16) {
      auto *block = static_cast<Cache **>(std::malloc(bytes));
      for (size_t i = 0; i < bytes / sizeof block[0]; ++i) block[i] = g_cache;
      dirty.push_back(block);
    }
  // Kept: the freed blocks would otherwise join the heap's top, which glibc gives back to the
  // kernel, and the driver's memory would come back zeroed.
  static void *const fence = std::malloc(64);
  (void)fence;
  for (void *block : dirty) std::free(block);
  std::vector<void *>().swap(dirty);
  g_context = victim_primary_context();
  CUcontext created = nullptr;
  CHECK(cuCtxCreate_v2(&created, 0, 0));
  CHECK(cuCtxSetCurrent(g_context));
  CUmemPoolProps properties{};
  properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemoryPool pool = nullptr;
  CHECK(cuMemPoolCreate(&pool, &properties));
  g_cache->blocks[0] = allocate(kOverADirtyHeap);
  CHECK(cuMemPoolDestroy(pool));
  scrub_stack();
  return 0;
}
#endif

#ifndef CATALOGUE_HOST
// "reused_address": a driver keeps the addresses of allocations freed since in its tables (a
// list's slots past its count). On a device those addresses are never the host heap's; the
// simulator's must not be either, or a block the program allocates where freed device memory
// lay reads as held by the driver's table, and the allocation only that block holds as lost.
// So: allocations freed last to first (each leaves its address past the list's count), then
// blocks of the sizes a heap would have held them in, each holding one allocation.
VICTIM_NOINLINE int hold_where_device_memory_was() {
  const CUdeviceptr held = allocate(kWhereDeviceMemoryWas);
  constexpr size_t kFreed = 8;
  CUdeviceptr freed[kFreed];
  for (size_t i = 0; i < kFreed; ++i) freed[i] = allocate(size_t{4096} << (i % 4));
  for (size_t i = kFreed; i-- > 0;) CHECK(cuMemFree_v2(freed[i]));
  for (size_t i = 0; i < kFreed; ++i) {
    // The size a driver would ask of malloc to align the allocation (256 bytes) within it.
    g_reused[i] = static_cast<CUdeviceptr *>(std::malloc((size_t{4096} << (i % 4)) + 255));
    g_reused[i][0] = held;
  }
  scrub_stack();
  return 0;
}
#endif

[[maybe_unused]] VICTIM_NOINLINE void child() {
  g_global = allocate(kChildGlobal);
  drop(kChildDropped);
  scrub_stack();
}

}  // namespace

int main(int argc, char **argv) {
  sem_init(&g_threads_ready, 0, 0);
#ifdef CATALOGUE_HOST
  catalogue();
  scrub_stack();
  (void)argc;
  (void)argv;
  return 0;
#else
  if (argc > 1 && std::strcmp(argv[1], "dirty_heap") == 0) return drive_over_a_dirty_heap();
  g_context = victim_primary_context();
  if (argc > 1 && std::strcmp(argv[1], "mappings") == 0) {
    const int status = hold_in_own_mappings();
    scrub_stack();
    return status;
  }
  if (argc > 1 && std::strcmp(argv[1], "many_mappings") == 0) {
    const int status = hold_in_many_mappings();
    scrub_stack();
    return status;
  }
#endif
  const char *mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "kill") == 0) {
    g_global = allocate(kGlobal);
    drop(kDropped);
    raise(SIGKILL);
  }
  if (std::strcmp(mode, "lease") == 0) {
    const leaseguard_lease_t lease = LEASEGUARD_LEASE_BEGIN("request", 0, 0);
    LEASEGUARD_LEASE_ENTER(lease);
    g_global = allocate(kGlobal);
    drop(kDropped);
    LEASEGUARD_LEASE_LEAVE();
    scrub_stack();
    LEASEGUARD_LEASE_END(lease);
    return 0;
  }
#ifndef CATALOGUE_HOST
  if (std::strcmp(mode, "ttl") == 0) return outlive_the_process_lease();
  if (std::strcmp(mode, "handles") == 0) return keep_and_drop_handles();
  if (std::strcmp(mode, "exit_path") == 0) exit_over_stale_copies();
  if (std::strcmp(mode, "signal_action") == 0) return install_action_over_stale_bytes();
  if (std::strcmp(mode, "reused_address") == 0) return hold_where_device_memory_was();
  if (std::strcmp(mode, "main_returns") == 0) {
    // main's own locals, dead once it returns: the exit path's frames lie over them.
    volatile CUdeviceptr dropped[64];
    g_global = allocate(kGlobal);
    const CUdeviceptr pointer = allocate(kStaleCopies);
    for (auto &copy : dropped) copy = pointer;
    return 0;
  }
#endif
  if (std::strcmp(mode, "gate") == 0) {
    g_global = allocate(kGlobal);
    g_cache = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
    g_cache->blocks[0] = allocate(kHeapStruct);
    t_tls = allocate(kTls);
    start_thread(blocked_thread);
    if (argc > 2 && std::strcmp(argv[2], "drop") == 0) drop(kDropped);
    scrub_stack();
    return 0;
  }
  catalogue();
  scrub_stack();
  const pid_t pid = fork();
  if (pid == 0) {
    child();
    // exit() is called from here, with this frame's callee-saved registers as they are: one
    // may still hold the dropped pointer (the classification reads the exiting thread's
    // registers, as LeakSanitizer does). They are cleared, as scrub_stack clears the stack.
    asm volatile(
        "xor %%ebx, %%ebx\n\txor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\txor %%r14d, %%r14d\n\txor %%r15d, %%r15d"
        :
        :
        : "rbx", "r12", "r13", "r14", "r15");
    std::exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  scrub_stack();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 5;
}
