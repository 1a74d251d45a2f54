// Implementation of the simulated GPU's state (see sim_device.h for the semantics).
#include "sim_device.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "sim_device_heap.h"
#include "sim_usage.h"
#include "sim_visible_devices.h"

namespace leaseguard::sim {

static_assert(DriverLock::kShards == kUsageRows, "each driver shard publishes in a usage row of its own");
static_assert(DriverLock::kShards == device_heap::kShards, "each driver shard keeps device memory of its own");

namespace {

constexpr size_t kAlignment = 256;
constexpr size_t kDefaultCapacity = 80ull << 30;
constexpr size_t kMaxGrantStep = size_t{64} << 20;  // see SimDriver::AllocationShard

// Each thread's context stack, and its top kept beside it in initial-exec storage: reading
// the current context, which every hooked allocation does, is then one thread-local load, as
// in a real driver (the vector alone needs a __tls_get_addr call from a shared library).
// The stack is made on a thread's first push and outlives the thread's own TLS destructors,
// as a driver's per-thread state does: a program's static destructors, which run after the
// main thread's TLS destructors at exit, still push and pop contexts to free memory. A
// thread's stack goes when the thread ends (a thread-specific value's destructor, which the
// main thread's exit() never runs).
__thread std::vector<CUcontext> *t_context_stack = nullptr;
__thread CUcontext t_current_context __attribute__((tls_model("initial-exec"))) = nullptr;

void forget_context_stack(void *stack) {
  delete static_cast<std::vector<CUcontext> *>(stack);
  t_context_stack = nullptr;
  t_current_context = nullptr;
}

pthread_key_t context_stack_key() {
  static const pthread_key_t key = [] {
    pthread_key_t made{};
    pthread_key_create(&made, forget_context_stack);
    return made;
  }();
  return key;
}

void push_context(CUcontext ctx) {
  if (t_context_stack == nullptr) {
    t_context_stack = new std::vector<CUcontext>;
    pthread_setspecific(context_stack_key(), t_context_stack);
  }
  t_context_stack->push_back(ctx);
  t_current_context = ctx;
}
void pop_context() {
  t_context_stack->pop_back();
  t_current_context = t_context_stack->empty() ? nullptr : t_context_stack->back();
}

// Parses "80G", "512M", "1048576". Returns `fallback` and warns on a bad value.
size_t parse_bytes(const char *variable, size_t fallback) {
  const char *text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  unsigned shift = 0;
  if (end != text && *end != '\0') {
    switch (*end) {
      case 'K':
      case 'k': shift = 10; break;
      case 'M':
      case 'm': shift = 20; break;
      case 'G':
      case 'g': shift = 30; break;
      case 'T':
      case 't': shift = 40; break;
      default: shift = 64;
    }
    if (shift != 64 && end[1] != '\0' && !(end[1] == 'i' && end[2] == 'B' && end[3] == '\0') &&
        !(end[1] == 'B' && end[2] == '\0'))
      shift = 64;
  }
  if (end == text || errno != 0 || text[0] == '-' || shift == 64 || (shift != 0 && value > (~0ull >> shift))) {
    std::fprintf(stderr, "leaseguard-sim: %s='%s' is not a byte count; using %zu\n", variable, text, fallback);
    return fallback;
  }
  return static_cast<size_t>(value << shift);
}

// One of two words; `fallback` (with a warning) for anything else.
bool parse_choice(const char *variable, const char *no, const char *yes, bool fallback) {
  const char *text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  if (std::strcmp(text, yes) == 0) return true;
  if (std::strcmp(text, no) == 0) return false;
  std::fprintf(stderr, "leaseguard-sim: %s='%s' is neither '%s' nor '%s'; using '%s'\n", variable, text, no, yes,
               fallback ? yes : no);
  return fallback;
}

int parse_count(const char *variable, int fallback, int max) {
  const char *text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > max) {
    std::fprintf(stderr, "leaseguard-sim: %s='%s' is not a count in 0..%d; using %d\n", variable, text, max, fallback);
    return fallback;
  }
  return static_cast<int>(value);
}

size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

}  // namespace

SimDriver &SimDriver::instance() {
  static SimDriver *driver =
      new (cleared_memory_for<SimDriver>()) SimDriver;  // never destroyed: late frees at exit stay valid
  return *driver;
}

SimDriver::SimDriver() {
  capacity_ = parse_bytes("LEASEGUARD_SIM_CAPACITY", kDefaultCapacity);
  // The node has LEASEGUARD_SIM_DEVICES GPUs; the process sees those CUDA_VISIBLE_DEVICES names.
  gpus_ = visible_gpus(std::getenv("CUDA_VISIBLE_DEVICES"), parse_count("LEASEGUARD_SIM_DEVICES", 1, 64));
  device_count_ = static_cast<int>(gpus_.size());
  reuse_contexts_ = parse_count("LEASEGUARD_SIM_REUSE_CONTEXTS", 0, 1) == 1;
  destroy_linger_ms_ = parse_count("LEASEGUARD_SIM_DESTROY_LINGER_MS", 0, 60'000);
  forked_child_inherits_ = parse_choice("LEASEGUARD_SIM_FORKED_CHILD", "fails", "inherits", false);
  ungranted_.store(capacity_, std::memory_order_relaxed);
  // Small enough that the shards' unused grants are a small part of a small test device.
  grant_step_ = std::min(kMaxGrantStep, capacity_ / (4 * DriverLock::kShards));
  for (int d = 0; d < device_count_; ++d) {
    auto *primary = new (cleared_memory_for<SimContext>()) SimContext;
    primary->device = d;
    primary->primary = true;
    primary->alive = false;
    primaries_.push_back(primary);
    contexts_.push_back(primary);
  }
  for (int d = 0; d < device_count_; ++d) {
    auto *pool = new (cleared_memory_for<SimPool>()) SimPool;
    pool->device = d;
    pool->is_default = true;
    default_pools_.push_back(pool);
    pools_.push_back(pool);
  }
  // fork() while another thread is inside the driver must not leave the child's copy of
  // the lock held forever. The device heap's locks are taken inside the driver's: its
  // handlers first, so that its prepare handler runs last.
  device_heap::register_fork_handlers();
  pthread_atfork([] { SimDriver::instance().driver_lock_.lock(); }, [] { SimDriver::instance().driver_lock_.unlock(); },
                 [] { SimDriver::instance().forked(); });
}

void SimDriver::forked() {
  // The driver refuses a child forked after cuInit: cuInit and every call after it return
  // CUDA_ERROR_NOT_INITIALIZED, for good. (A child forked before cuInit initializes as any
  // process does.) The lock is the child's copy, held by the prepare handler: nobody else
  // can be in here.
  if (initialized_ && !forked_child_inherits_) {
    initialized_ = false;
    initialized_for_good_.store(false, std::memory_order_relaxed);
    forked_after_init_ = true;
  }
  driver_lock_.unlock();
}

CUresult SimDriver::init() {
  // The HIP runtime's every call initializes: after the first, without the whole lock (each
  // of its shards, one by one), as a real runtime initializes once.
  if (initialized_for_good_.load(std::memory_order_acquire)) return CUDA_SUCCESS;
  std::lock_guard lock(driver_lock_);
  if (forked_after_init_) return CUDA_ERROR_NOT_INITIALIZED;
  if (device_count_ == 0) return CUDA_ERROR_NO_DEVICE;  // CUDA_VISIBLE_DEVICES names none
  initialized_ = true;
  initialized_for_good_.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

size_t SimDriver::used() const {
  std::lock_guard lock(driver_lock_);
  return used_locked();
}

bool SimDriver::context_valid_locked(CUcontext ctx) const {
  auto *context = reinterpret_cast<SimContext *>(ctx);
  return std::find(contexts_.begin(), contexts_.end(), context) != contexts_.end() && context->alive;
}

CUresult SimDriver::create_context(int device, CUcontext *out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
  // A real driver's contexts are heap objects, so a new context may get the handle of one
  // destroyed before it; on request the simulator does that deterministically (the newest
  // destroyed one), so tests can check that nothing keyed by a handle outlives its context.
  SimContext *context = nullptr;
  if (reuse_contexts_) {
    auto dead = std::find_if(contexts_.rbegin(), contexts_.rend(),
                             [](const SimContext *c) { return !c->primary && !c->alive; });
    if (dead != contexts_.rend()) {
      context = *dead;
      *context = SimContext{};
    }
  }
  if (context == nullptr) {
    context = new (cleared_memory_for<SimContext>()) SimContext;
    contexts_.push_back(context);
  }
  context->device = device;
  context->id = ++last_context_id_;
  *out = reinterpret_cast<CUcontext>(context);
  push_context(*out);
  return CUDA_SUCCESS;
}

namespace {

void list_allocation(SimContext *context, size_t shard, uint64_t address) {
  SimContext::AllocationList &list = context->allocations[shard];
  if (list.count == list.capacity) {
    const size_t capacity = list.capacity == 0 ? 16 : list.capacity * 2;
    void *grown = std::realloc(list.addresses, capacity * sizeof(uint64_t));
    if (grown == nullptr) return;
    list.addresses = static_cast<uint64_t *>(grown);
    // Cleared past the count, as the rest of the driver's memory is (cleared_memory_for).
    std::memset(list.addresses + list.count, 0, (capacity - list.count) * sizeof(uint64_t));
    list.capacity = capacity;
  }
  list.addresses[list.count++] = address;
}

void unlist_allocation(SimContext *context, size_t shard, uint64_t address) {
  SimContext::AllocationList &list = context->allocations[shard];
  for (size_t i = list.count; i-- > 0;) {
    if (list.addresses[i] != address) continue;
    list.addresses[i] = list.addresses[--list.count];
    return;
  }
}

// Host memory, another process's memory opened over IPC and imported external memory do not
// take device capacity here.
bool takes_capacity(MemoryKind kind) {
  return kind != MemoryKind::Host && kind != MemoryKind::Ipc && kind != MemoryKind::ExternalBuffer;
}

// The memory behind an allocation, made and given back outside any lock.
struct Backing {
  void *base = nullptr;
  size_t reserved = 0;
  bool mapped = false;
};

Backing make_backing(size_t reserved, MemoryKind kind) {
  Backing backing;
  if (kind == MemoryKind::Legacy32) {
    // 32-bit entry points need low addresses, mapped for each.
    backing.reserved = round_up(reserved, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    void *base = mmap(nullptr, backing.reserved, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_32BIT, -1, 0);
    if (base == MAP_FAILED) return Backing{};
    backing.base = base;
    backing.mapped = true;
  } else if (reserved > device_heap::kLargestBlock) {
    // Large requests cost nothing until touched.
    backing.reserved = round_up(reserved, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    backing.base = device_heap::take_range(backing.reserved);
    if (backing.base == nullptr) return Backing{};
  } else {
    backing.base = device_heap::take(reserved, DriverLock::own_shard());
    if (backing.base == nullptr) return Backing{};
    backing.reserved = reserved;
  }
  return backing;
}

void give_back(const Backing &backing) {
  if (backing.mapped) munmap(backing.base, backing.reserved);
  else if (backing.reserved > device_heap::kLargestBlock) device_heap::give_back_range(backing.base, backing.reserved);
  else device_heap::give_back(backing.base, backing.reserved, DriverLock::own_shard());
}

// An allocation of `bytes` on `backing`.
SimAllocation allocation_on(const Backing &backing, size_t bytes, MemoryKind kind, SimContext *context) {
  SimAllocation allocation;
  allocation.bytes = bytes;
  allocation.reserved = backing.reserved;
  allocation.context = context;
  allocation.kind = kind;
  allocation.mapped = backing.mapped;
  return allocation;
}

Backing backing_of(uint64_t address, const SimAllocation &allocation) {
  return Backing{reinterpret_cast<void *>(address), allocation.reserved, allocation.mapped};
}

int device_of(const SimAllocation &allocation) {
  return allocation.context != nullptr ? allocation.context->device : 0;
}

// Each thread's driver shard plus one (0: not chosen yet), dealt round robin.
std::atomic<size_t> g_next_shard{0};
__thread size_t t_shard_plus_one __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

size_t DriverLock::own_shard() {
  if (__builtin_expect(t_shard_plus_one == 0, false))
    t_shard_plus_one = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards + 1;
  return t_shard_plus_one - 1;
}

bool SimDriver::charge_in_shard(size_t shard, int device, size_t bytes) {
  AllocationShard &account = shards_[shard];
  if (bytes > account.granted - account.used) {
    const size_t needed = bytes - (account.granted - account.used);
    // A step more than needed where there is that much, so that the next allocations need
    // no grant; else just what is needed.
    size_t left = ungranted_.load(std::memory_order_relaxed);
    size_t taken = 0;
    do {
      if (left < needed) return false;
      taken = std::min(left, needed + grant_step_);
    } while (!ungranted_.compare_exchange_weak(left, left - taken, std::memory_order_relaxed));
    account.granted += taken;
  }
  account.used += bytes;
  publish_usage(shard, node_gpu(device), static_cast<int64_t>(bytes));
  return true;
}

void SimDriver::refund_in_shard(size_t shard, int device, size_t bytes) {
  AllocationShard &account = shards_[shard];
  account.used -= bytes;
  publish_usage(shard, node_gpu(device), -static_cast<int64_t>(bytes));
  // A shard keeps at most two steps unused: a thread that freed much leaves the rest to others.
  if (account.granted - account.used > 2 * grant_step_) {
    const size_t returned = account.granted - account.used - grant_step_;
    account.granted -= returned;
    ungranted_.fetch_add(returned, std::memory_order_relaxed);
  }
}

size_t SimDriver::used_locked() const {
  size_t used = whole_used_;
  for (const AllocationShard &shard : shards_) used += shard.used;
  return used;
}

void SimDriver::take_back_grants_locked() {
  for (AllocationShard &shard : shards_) {
    ungranted_.fetch_add(shard.granted - shard.used, std::memory_order_relaxed);
    shard.granted = shard.used;
  }
}

void SimDriver::charge_shard_locked(size_t shard, int device, size_t bytes) {
  if (charge_in_shard(shard, device, bytes)) return;
  take_back_grants_locked();  // fits_locked(bytes): now what no shard holds covers it
  charge_in_shard(shard, device, bytes);
}

void SimDriver::charge_locked(int device, size_t bytes) {
  if (ungranted_.load(std::memory_order_relaxed) < bytes) take_back_grants_locked();
  ungranted_.fetch_sub(bytes, std::memory_order_relaxed);
  whole_used_ += bytes;
  publish_usage(0, node_gpu(device), static_cast<int64_t>(bytes));
}

void SimDriver::refund_locked(int device, size_t bytes) {
  whole_used_ -= bytes;
  ungranted_.fetch_add(bytes, std::memory_order_relaxed);
  publish_usage(0, node_gpu(device), -static_cast<int64_t>(bytes));
}

SimDriver::Found SimDriver::find_allocation_locked(uint64_t address) const {
  for (size_t shard = 0; shard < DriverLock::kShards; ++shard) {
    auto it = shards_[shard].allocations.find(address);
    if (it != shards_[shard].allocations.end()) return Found{shard, &it->second};
  }
  return Found{};
}

void SimDriver::add_allocation_locked(size_t shard, uint64_t address, const SimAllocation &allocation) {
  shards_[shard].allocations.emplace(address, allocation);
  if (allocation.context != nullptr) list_allocation(allocation.context, shard, address);
}

void SimDriver::free_context_memory_locked(SimContext *ctx) {
  __atomic_store_n(&ctx->sticky_error, 0, __ATOMIC_RELAXED);  // a reset context is usable again
  // Arrays and host registrations go with their context too; VMM memory and external
  // memory objects do not.
  for (auto it = arrays_.begin(); it != arrays_.end();) {
    if (it->second->context == ctx) {
      refund_locked(ctx->device, it->second->bytes);
      std::free(it->second->storage);
      delete it->second;
      it = arrays_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = registrations_.begin(); it != registrations_.end();)
    it = it->second.context == ctx ? registrations_.erase(it) : std::next(it);
  for (size_t shard = 0; shard < DriverLock::kShards; ++shard) {
    auto &allocations = shards_[shard].allocations;
    for (auto it = allocations.begin(); it != allocations.end();) {
      // Stream-ordered memory belongs to its pool, not the context (as on the real driver).
      if (it->second.context == ctx && it->second.kind != MemoryKind::Async) {
        if (takes_capacity(it->second.kind)) refund_in_shard(shard, ctx->device, it->second.reserved);
        give_back(backing_of(it->first, it->second));
        unlist_allocation(ctx, shard, it->first);
        it = allocations.erase(it);
      } else {
        ++it;
      }
    }
  }
}

CUresult SimDriver::destroy_context(CUcontext ctx) {
  std::vector<StorageEntry> ended;
  {
    std::lock_guard lock(driver_lock_);
    if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr || !context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    auto *context = reinterpret_cast<SimContext *>(ctx);
    if (context->primary) return CUDA_ERROR_INVALID_CONTEXT;  // the driver refuses this too
    free_context_memory_locked(context);
    ended = take_storage_locked(context);
    context->alive = false;
    if (t_current_context == ctx) pop_context();
  }
  run_storage_destructors(ctx, ended);
  return CUDA_SUCCESS;
}

std::vector<StorageEntry> SimDriver::take_storage_locked(SimContext *ctx) {
  std::vector<StorageEntry> taken;
  taken.swap(ctx->storage);
  return taken;
}

void SimDriver::run_storage_destructors(CUcontext ctx, const std::vector<StorageEntry> &entries) {
  for (const StorageEntry &entry : entries)
    if (entry.destructor != nullptr) entry.destructor(ctx, entry.key, entry.value);
}

CUresult SimDriver::storage_put(CUcontext ctx, const StorageEntry &entry) {
  return with_context(ctx, [&](SimContext &context) {
    for (StorageEntry &held : context.storage) {
      if (held.key != entry.key) continue;
      held = entry;
      return CUDA_SUCCESS;
    }
    context.storage.push_back(entry);
    return CUDA_SUCCESS;
  });
}

CUresult SimDriver::storage_get(CUcontext ctx, void *key, void **value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return with_context(ctx, [&](SimContext &context) {
    for (const StorageEntry &held : context.storage) {
      if (held.key != key) continue;
      *value = held.value;
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_HANDLE;
  });
}

CUresult SimDriver::storage_delete(CUcontext ctx, void *key) {
  return with_context(ctx, [&](SimContext &context) {
    auto held = std::find_if(context.storage.begin(), context.storage.end(),
                             [&](const StorageEntry &entry) { return entry.key == key; });
    if (held == context.storage.end()) return CUDA_ERROR_INVALID_HANDLE;
    context.storage.erase(held);
    return CUDA_SUCCESS;
  });
}

void SimDriver::linger_after_destroy() const {
  if (destroy_linger_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(destroy_linger_ms_));
}

CUresult SimDriver::retain_primary(int device, CUcontext *out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
  SimContext *primary = primaries_[static_cast<size_t>(device)];
  if (primary->primary_refs == 0) primary->id = ++last_context_id_;  // made (again)
  primary->alive = true;
  ++primary->primary_refs;
  *out = reinterpret_cast<CUcontext>(primary);
  return CUDA_SUCCESS;
}

CUresult SimDriver::release_primary(int device, bool *destroyed) {
  if (destroyed != nullptr) *destroyed = false;
  std::vector<StorageEntry> ended;
  SimContext *primary = nullptr;
  {
    std::lock_guard lock(driver_lock_);
    if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
    if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
    primary = primaries_[static_cast<size_t>(device)];
    if (primary->primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--primary->primary_refs == 0) {
      free_context_memory_locked(primary);
      ended = take_storage_locked(primary);
      primary->alive = false;
      if (destroyed != nullptr) *destroyed = true;
    }
  }
  run_storage_destructors(reinterpret_cast<CUcontext>(primary), ended);
  return CUDA_SUCCESS;
}

CUresult SimDriver::context_id(CUcontext ctx, unsigned long long *id) const {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = current();
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr || !context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *id = reinterpret_cast<const SimContext *>(ctx)->id;
  return CUDA_SUCCESS;
}

CUresult SimDriver::reset_primary(int device) {
  std::vector<StorageEntry> ended;
  SimContext *primary = nullptr;
  {
    std::lock_guard lock(driver_lock_);
    if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
    if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
    primary = primaries_[static_cast<size_t>(device)];
    free_context_memory_locked(primary);
    ended = take_storage_locked(primary);
  }
  run_storage_destructors(reinterpret_cast<CUcontext>(primary), ended);
  return CUDA_SUCCESS;
}

CUresult SimDriver::primary_state(int device, unsigned *flags, int *active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
  SimContext *primary = primaries_[static_cast<size_t>(device)];
  *flags = primary->flags;
  *active = primary->alive && primary->primary_refs > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult SimDriver::set_primary_flags(int device, unsigned flags) {
  constexpr unsigned kKnownFlags = 0xff;  // CU_CTX_FLAGS_MASK
  if ((flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count_) return CUDA_ERROR_INVALID_DEVICE;
  primaries_[static_cast<size_t>(device)]->flags = flags;
  return CUDA_SUCCESS;
}

CUresult SimDriver::set_current(CUcontext ctx) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr) {
    if (t_current_context != nullptr) pop_context();
    return CUDA_SUCCESS;
  }
  if (!context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_current_context != nullptr) pop_context();
  push_context(ctx);
  return CUDA_SUCCESS;
}

CUcontext SimDriver::current() const { return t_current_context; }

CUresult SimDriver::sticky_error(CUcontext ctx) const {
  auto *context = reinterpret_cast<SimContext *>(ctx != nullptr ? ctx : t_current_context);
  return context == nullptr ? CUDA_SUCCESS
                            : static_cast<CUresult>(__atomic_load_n(&context->sticky_error, __ATOMIC_RELAXED));
}

void SimDriver::set_sticky_error(CUresult status) {
  auto *context = reinterpret_cast<SimContext *>(t_current_context);
  if (context != nullptr) __atomic_store_n(&context->sticky_error, static_cast<int>(status), __ATOMIC_RELAXED);
}

CUresult SimDriver::push_current(CUcontext ctx) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  push_context(ctx);
  return CUDA_SUCCESS;
}

CUresult SimDriver::pop_current(CUcontext *out) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (out != nullptr) *out = t_current_context;
  pop_context();
  return CUDA_SUCCESS;
}

CUresult SimDriver::current_device(int *device) const {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext ctx = current();
  if (ctx == nullptr || !context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<SimContext *>(ctx)->device;
  return CUDA_SUCCESS;
}

CUresult SimDriver::checked_context_locked(SimContext **out) const {
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext ctx = current();
  if (ctx == nullptr || !context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *out = reinterpret_cast<SimContext *>(ctx);
  return CUDA_SUCCESS;
}

CUresult SimDriver::allocate(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool) {
  if (address == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const CUresult status = allocate_in_own_shard(bytes, kind, address, pool);
  if (status != kUnderWholeLock) return status;
  std::lock_guard lock(driver_lock_);
  return allocate_locked(bytes, kind, address, pool, true);
}

CUresult SimDriver::allocate_unowned(size_t bytes, MemoryKind kind, uint64_t *address) {
  if (kind == MemoryKind::Async) return CUDA_ERROR_INVALID_VALUE;  // a pool's, through a context
  if (address == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  return allocate_locked(bytes, kind, address, nullptr, false);
}

CUresult SimDriver::allocate_in_own_shard(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool) {
  const size_t reserved = round_up(bytes, kAlignment);
  if (reserved < bytes || reserved > capacity_) return kUnderWholeLock;  // it says which error comes first
  const Backing backing = make_backing(reserved, kind);
  if (backing.base == nullptr) return kUnderWholeLock;
  const size_t shard = DriverLock::own_shard();
  CUresult status = CUDA_SUCCESS;
  {
    std::lock_guard lock(driver_lock_.shard(shard));
    // Contexts and initialized_ change only under the whole lock: holding a shard, they hold still.
    CUcontext ctx = current();
    if (!initialized_) status = CUDA_ERROR_NOT_INITIALIZED;
    else if (ctx == nullptr || !context_valid_locked(ctx)) status = CUDA_ERROR_INVALID_CONTEXT;
    else if (kind == MemoryKind::Async && (pool = allocating_pool_locked(ctx, pool)) == nullptr)
      status = kUnderWholeLock;
    else if (takes_capacity(kind) &&
             !charge_in_shard(shard, reinterpret_cast<SimContext *>(ctx)->device, backing.reserved))
      status = kUnderWholeLock;
    if (status == CUDA_SUCCESS) {
      *address = reinterpret_cast<uint64_t>(backing.base);
      SimAllocation allocation = allocation_on(backing, bytes, kind, reinterpret_cast<SimContext *>(ctx));
      if (kind == MemoryKind::Async) {
        allocation.pool = pool;
        pool->used_in[shard].bytes += backing.reserved;
      }
      add_allocation_locked(shard, *address, allocation);
    }
  }
  if (status != CUDA_SUCCESS) give_back(backing);
  return status;
}

CUresult SimDriver::allocate_locked(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool, bool in_context) {
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext ctx = in_context ? current() : nullptr;
  if (in_context && (ctx == nullptr || !context_valid_locked(ctx))) return CUDA_ERROR_INVALID_CONTEXT;
  const size_t reserved = round_up(bytes, kAlignment);
  if (reserved < bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  if (takes_capacity(kind) && !fits_locked(reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (kind == MemoryKind::Async && (pool = allocating_pool_locked(ctx, pool)) == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  const Backing backing = make_backing(reserved, kind);
  if (backing.base == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  // A page-rounded mapping may no longer fit where its request did.
  if (takes_capacity(kind) && !fits_locked(backing.reserved)) {
    give_back(backing);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }

  SimAllocation allocation = allocation_on(backing, bytes, kind, reinterpret_cast<SimContext *>(ctx));
  const size_t shard = DriverLock::own_shard();
  if (takes_capacity(kind)) charge_shard_locked(shard, device_of(allocation), backing.reserved);
  if (kind == MemoryKind::Async) {
    allocation.pool = pool;
    pool->used_in[shard].bytes += backing.reserved;
    pool->used_high = std::max(pool->used_high, pool->used_locked());
  }
  *address = reinterpret_cast<uint64_t>(backing.base);
  add_allocation_locked(shard, *address, allocation);
  return CUDA_SUCCESS;
}

CUresult SimDriver::release(uint64_t address, std::initializer_list<MemoryKind> allowed) {
  const CUresult status = release_in_shards(address, allowed);
  if (status != kUnderWholeLock) return status;
  std::lock_guard lock(driver_lock_);
  return release_locked(address, allowed);
}

CUresult SimDriver::release_in_shards(uint64_t address, std::initializer_list<MemoryKind> allowed) {
  // Most frees are of the calling thread's own allocations, in its own shard: that first.
  const size_t own = DriverLock::own_shard();
  for (size_t step = 0; step < DriverLock::kShards; ++step) {
    const size_t shard = (own + step) % DriverLock::kShards;
    Backing backing;
    {
      std::lock_guard lock(driver_lock_.shard(shard));
      if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
      auto &allocations = shards_[shard].allocations;
      auto it = allocations.find(address);
      if (it == allocations.end()) continue;
      const SimAllocation &allocation = it->second;
      if (std::find(allowed.begin(), allowed.end(), allocation.kind) == allowed.end()) return CUDA_ERROR_INVALID_VALUE;
      if (takes_capacity(allocation.kind)) refund_in_shard(shard, device_of(allocation), allocation.reserved);
      if (allocation.pool != nullptr) allocation.pool->used_in[shard].bytes -= allocation.reserved;
      if (allocation.context != nullptr) unlist_allocation(allocation.context, shard, address);
      backing = backing_of(address, allocation);
      allocations.erase(it);
    }
    give_back(backing);  // out of the table first: the host may hand the address out again
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult SimDriver::release_locked(uint64_t address, std::initializer_list<MemoryKind> allowed) {
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  const Found found = find_allocation_locked(address);
  if (found.allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const SimAllocation allocation = *found.allocation;
  if (std::find(allowed.begin(), allowed.end(), allocation.kind) == allowed.end()) return CUDA_ERROR_INVALID_VALUE;
  if (takes_capacity(allocation.kind)) refund_in_shard(found.shard, device_of(allocation), allocation.reserved);
  if (allocation.pool != nullptr) allocation.pool->used_in[found.shard].bytes -= allocation.reserved;
  if (allocation.context != nullptr) unlist_allocation(allocation.context, found.shard, address);
  shards_[found.shard].allocations.erase(address);
  give_back(backing_of(address, allocation));
  return CUDA_SUCCESS;
}

CUresult SimDriver::address_range(uint64_t address, uint64_t *base, size_t *size) const {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  bool found = false;
  for_each_allocation_locked([&](uint64_t start, const SimAllocation &allocation) {
    if (allocation.kind == MemoryKind::Host || address < start || address - start >= allocation.bytes) return false;
    *base = start;
    *size = allocation.bytes;
    found = true;
    return true;
  });
  if (found) return CUDA_SUCCESS;
  auto mapping = mappings_.upper_bound(address);
  if (mapping != mappings_.begin() && address < std::prev(mapping)->first + std::prev(mapping)->second.size) {
    *base = std::prev(mapping)->first;
    *size = std::prev(mapping)->second.size;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult SimDriver::describe(uint64_t address, PointerInfo *info) const {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  bool found = false;
  for_each_allocation_locked([&](uint64_t start, const SimAllocation &allocation) {
    if (address < start || address - start >= allocation.bytes) return false;
    info->base = start;
    info->size = allocation.bytes;
    info->kind = allocation.kind;
    info->context = allocation.context;
    info->device = device_of(allocation);
    info->pool = allocation.pool;
    found = true;
    return true;
  });
  if (found) return CUDA_SUCCESS;
  for (const auto &[start, registration] : registrations_) {
    if (address < start || address - start >= registration.bytes) continue;
    info->base = start;
    info->size = registration.bytes;
    info->kind = MemoryKind::Host;
    info->context = registration.context;
    info->device = registration.context != nullptr ? registration.context->device : 0;
    return CUDA_SUCCESS;
  }
  auto mapping = mappings_.upper_bound(address);
  if (mapping != mappings_.begin() && address < std::prev(mapping)->first + std::prev(mapping)->second.size) {
    info->base = std::prev(mapping)->first;
    info->size = std::prev(mapping)->second.size;
    info->kind = MemoryKind::Device;
    info->device = std::prev(mapping)->second.physical != nullptr ? std::prev(mapping)->second.physical->device : 0;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;  // the driver's answer for memory it does not know
}

bool SimDriver::range_valid(uint64_t address, size_t bytes) const {
  std::lock_guard lock(driver_lock_);
  if (vmm_range_accessible_locked(address, bytes)) return true;
  // A copy from an allocation's start is found at once: a leak checker reading back every
  // live allocation does one per allocation. Inside one, a linear scan (copies are rare).
  if (const SimAllocation *found = find_allocation_locked(address).allocation) return bytes <= found->bytes;
  bool inside = false;
  for_each_allocation_locked([&](uint64_t base, const SimAllocation &allocation) {
    inside = address >= base && address - base <= allocation.bytes && bytes <= allocation.bytes - (address - base);
    return inside;
  });
  return inside;
}

}  // namespace leaseguard::sim
