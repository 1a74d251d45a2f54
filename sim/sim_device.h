// The simulated GPU: devices, contexts and device memory kept in host memory.
//
// Semantics follow the CUDA driver where leaseguard depends on them: 256-byte aligned
// addresses, CUDA_ERROR_OUT_OF_MEMORY past a capacity (LEASEGUARD_SIM_CAPACITY, default
// 80 GiB, committed lazily), CUDA_ERROR_INVALID_VALUE for unknown or double frees, and
// context destroy / primary-context reset freeing every allocation of the context except
// stream-ordered (pool) memory. Its cost is the same with and without leaseguard in front
// of it; and threads that allocate and free at once share no lock and no cache line (see
// DriverLock), so that a tracker's own cost in threads can be measured on it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lg_cuda.h"
#include "sim_cleared.h"

namespace leaseguard::sim {

// The driver's lock, in shards, one a thread (round robin; threads past kShards share).
// Allocating and freeing device memory take only the calling thread's shard (a free of
// another thread's allocation looks through the others one at a time); every other call
// takes all of them, in order, and so excludes everything. So threads that allocate at once
// wait on nothing and write no line another thread writes, as on a driver whose allocator
// scales: a single lock made two threads four times slower each here, which hid any
// tracker's own scaling. `std::lock_guard` on the whole of it is the lock of old.
class DriverLock {
 public:
  static constexpr size_t kShards = 32;
  void lock() {
    for (Shard &shard : shards_) shard.mutex.lock();
  }
  void unlock() {
    for (size_t i = kShards; i-- > 0;) shards_[i].mutex.unlock();
  }
  std::mutex &shard(size_t index) { return shards_[index].mutex; }
  // The calling thread's shard.
  static size_t own_shard();

 private:
  struct alignas(64) Shard {
    std::mutex mutex;
  };
  std::array<Shard, kShards> shards_;
};

// Each simulated device's PCI address: domain 0, bus kFirstPciBus + ordinal, device 0.
constexpr int kFirstPciBus = 0x18;

// A stream. The simulator runs every operation when it is issued, so a stream is always
// idle and holds only what a program reads back.
struct SimStream {
  unsigned flags = 0;
  int priority = 0;
};

// A value the CUDA runtime keeps with a context (export table CONTEXT_LOCAL_STORAGE, see
// sim_export_tables.cpp); its destructor runs when the context ends, which is how the
// runtime learns that cuDevicePrimaryCtxReset or a destroy took its state away.
using StorageDestructor = void (*)(CUcontext, void *key, void *value);
struct StorageEntry {
  void *key = nullptr;
  void *value = nullptr;
  StorageDestructor destructor = nullptr;
};

struct SimContext {
  int device = 0;
  bool primary = false;
  bool alive = true;
  int primary_refs = 0;
  // cuCtxGetId: unique for the process's life, so a primary context made again after its
  // last release (same handle here) has a new one.
  uint64_t id = 0;
  // What a program sets and reads back (cuCtxGetFlags, cuCtxGetLimit, cuCtxGetCacheConfig):
  // kept, not acted on. The limits start at a Hopper GPU's defaults, indexed by CUlimit.
  unsigned flags = 0;
  size_t limits[10] = {1024, 1u << 20, 8u << 20, 2, 2048, 32, 0, 0, 0, 0};
  int cache_config = 0;
  int shared_config = 0;
  ClearedVector<CUcontext> peers;  // contexts whose memory this one may access (cuCtxEnablePeerAccess)
  std::vector<StorageEntry> storage;
  // A kernel that faulted leaves the context unusable, as on a device: every later launch,
  // copy and synchronization in it fails with this status (0: none) until it is destroyed or
  // reset. Read and written with __atomic builtins: a launch sets it on any thread.
  int sticky_error = 0;
  // The context's allocations, in host memory the context points to, as a real driver keeps
  // them (malloc'd as a C driver does): a leak checker that scans the program's memory
  // reaches these tables through the CUcontext the program holds, and must leave them out.
  // One a driver shard, guarded by it.
  struct alignas(64) AllocationList {
    uint64_t *addresses = nullptr;
    size_t count = 0;
    size_t capacity = 0;
  };
  std::array<AllocationList, DriverLock::kShards> allocations;
};

// Module: a loaded library's variables (sim_libraries.h), freed by its unload or its
// context's end, never by cuMemFree.
enum class MemoryKind { Device, Pitched, Managed, Host, Async, Legacy32, Ipc, ExternalBuffer, Module };

// Its device, kind and destroyed flag change only under the whole lock, so a shard's holder
// reads them as they are. What is allocated from it is counted in a row a shard (the shard
// whose table lists the allocation, changed under its lock): threads allocating from one pool
// at once share no cache line, as with cuMemAlloc. The rows are summed under the whole lock.
struct SimPool {
  int device = 0;
  bool is_default = false;
  bool destroyed = false;  // destroyed with allocations outstanding: released with the last
  struct alignas(64) Row {
    size_t bytes = 0;
  };
  std::array<Row, DriverLock::kShards> used_in{};  // bytes allocated from it and not yet freed
  // The most in use at once, as seen under the whole lock (by an allocation made under it
  // and by every query): exact for a program that asks while its use is highest, and never
  // more than the real high-water mark (threads allocating in their shards at once may pass
  // it, and come back, between two looks).
  size_t used_high = 0;
  size_t used_locked() const noexcept {  // under the whole lock
    size_t sum = 0;
    for (const Row &row : used_in) sum += row.bytes;
    return sum;
  }
};

// VMM physical memory: a memfd, so that every mapping of it shares the same pages.
struct SimPhysical {
  size_t size = 0;
  int fd = -1;
  int device = -1;  // -1: host-located
  bool exportable = false;
  bool counted = false;  // counts against the device's capacity (not imported copies)
  int handles = 0;       // cuMemCreate / retain / import references not yet released
  int mappings = 0;
};

struct SimMapping {
  size_t size = 0;
  size_t offset = 0;
  SimPhysical *physical = nullptr;
  bool accessible = false;  // cuMemSetAccess made it readable (copies and memsets check this)
};

struct SimArray {
  size_t bytes = 0;
  SimContext *context = nullptr;
  bool mipmapped = false;
  void *storage = nullptr;
};

struct SimRegistration {
  size_t bytes = 0;
  SimContext *context = nullptr;
};

struct SimExternalMemory {
  int fd = -1;
  size_t size = 0;
};

struct SimAllocation {
  size_t bytes = 0;     // what the caller asked for
  size_t reserved = 0;  // what was mapped or allocated
  SimContext *context = nullptr;
  MemoryKind kind = MemoryKind::Device;
  bool mapped = false;      // mmap'd for itself (32-bit), not in the device's space (sim_device_heap.h)
  SimPool *pool = nullptr;  // stream-ordered memory: the pool it came from
};

class SimDriver {
 public:
  static SimDriver &instance();

  CUresult init();
  // The fork handler in the child (see LEASEGUARD_SIM_FORKED_CHILD).
  void forked();
  void set_forked_child_inherits(bool inherits) { forked_child_inherits_ = inherits; }
  bool initialized() const { return initialized_; }
  int device_count() const { return device_count_; }
  // The node's GPU that the process's device `device` (an ordinal below device_count) is:
  // its index among all of them (sim_visible_devices.h).
  int node_gpu(int device) const { return gpus_[static_cast<size_t>(device)]; }
  size_t capacity() const { return capacity_; }
  size_t used() const;

  CUresult create_context(int device, CUcontext *out);
  CUresult destroy_context(CUcontext ctx);
  // Waits, holding nothing, as long as LEASEGUARD_SIM_DESTROY_LINGER_MS says: a context
  // destroy (a primary context's last release, a HIP device reset) then returns that long
  // after the memory is gone, so a test can act in between (allocate in a new context that
  // was given the destroyed one's handle, in the primary context made again, or on the reset
  // device, before the hook records the destroy).
  void linger_after_destroy() const;
  CUresult retain_primary(int device, CUcontext *out);
  // `*destroyed` (if asked): whether this was the last reference (the context and its
  // memory are gone).
  CUresult release_primary(int device, bool *destroyed = nullptr);
  CUresult context_id(CUcontext ctx, unsigned long long *id) const;
  CUresult reset_primary(int device);
  CUresult primary_state(int device, unsigned *flags, int *active);
  CUresult set_primary_flags(int device, unsigned flags);
  // Context-local storage (sim_export_tables.cpp). Null `ctx`: the current context.
  CUresult storage_put(CUcontext ctx, const StorageEntry &entry);
  CUresult storage_get(CUcontext ctx, void *key, void **value);
  CUresult storage_delete(CUcontext ctx, void *key);
  // Runs use(context) under the driver's lock for the live context `ctx` names (null: the
  // calling thread's current one); INVALID_CONTEXT if there is none.
  template <typename Use>
  CUresult with_context(CUcontext ctx, Use use) {
    std::lock_guard lock(driver_lock_);
    if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) ctx = current();
    if (ctx == nullptr || !context_valid_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    return use(*reinterpret_cast<SimContext *>(ctx));
  }

  // Current-context stack of the calling thread.
  CUresult set_current(CUcontext ctx);
  CUcontext current() const;
  // The sticky error of `ctx` (null: the current context), or CUDA_SUCCESS.
  CUresult sticky_error(CUcontext ctx = nullptr) const;
  void set_sticky_error(CUresult status);
  CUresult push_current(CUcontext ctx);
  CUresult pop_current(CUcontext *out);
  CUresult current_device(int *device) const;

  // Allocations need a current, live context (except Async from a pool, which uses the
  // device of the current context too). Async allocations name their pool (null: the
  // current device's default pool).
  CUresult allocate(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool = nullptr);
  // Memory of no context, freed only by release(): a library's __managed__ variables, which
  // exist for the process before any context does.
  CUresult allocate_unowned(size_t bytes, MemoryKind kind, uint64_t *address);
  // Frees an allocation whose kind is one of `allowed`; unknown or mismatched: INVALID_VALUE.
  CUresult release(uint64_t address, std::initializer_list<MemoryKind> allowed);

  // The allocation or VMM mapping holding `address`: its base and size.
  CUresult address_range(uint64_t address, uint64_t *base, size_t *size) const;

  // What cuPointerGetAttribute says of `address`: the allocation holding it (registered
  // host memory included) or a VMM mapping (kind Device, no context).
  struct PointerInfo {
    uint64_t base = 0;
    size_t size = 0;
    MemoryKind kind = MemoryKind::Device;
    SimContext *context = nullptr;
    int device = -1;
    SimPool *pool = nullptr;
  };
  CUresult describe(uint64_t address, PointerInfo *info) const;

  // Checks [address, address+bytes) lies inside one live allocation.
  bool range_valid(uint64_t address, size_t bytes) const;

  // Pools (sim_pools.cpp).
  SimPool *default_pool(int device);
  CUresult create_pool(const CUmemPoolProps *props, CUmemoryPool *out);
  CUresult destroy_pool(CUmemoryPool pool);
  CUresult trim_pool(CUmemoryPool pool);
  CUresult pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void *value);
  // The pool a stream-ordered allocation may come from, or null if it is not one.
  SimPool *usable_pool_locked(CUmemoryPool pool) const;
  // The pool a stream-ordered allocation in `ctx` comes from: `named`, if usable, or the
  // context's device's default pool; nullptr if `named` is not usable. Under the whole lock or
  // a shard's (pools are made and destroyed under the whole lock).
  SimPool *allocating_pool_locked(CUcontext ctx, SimPool *named) const;

  // Virtual memory management (sim_vmm.cpp).
  static constexpr size_t kVmmGranularity = 2u << 20;
  CUresult vmm_create(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop);
  CUresult vmm_release(CUmemGenericAllocationHandle handle);
  CUresult vmm_reserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr hint);
  CUresult vmm_free_range(CUdeviceptr ptr, size_t size);
  CUresult vmm_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle);
  CUresult vmm_unmap(CUdeviceptr ptr, size_t size);
  CUresult vmm_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
  CUresult vmm_retain(CUmemGenericAllocationHandle *handle, void *address);
  CUresult vmm_export(void *shareable, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType type);
  CUresult vmm_import(CUmemGenericAllocationHandle *handle, void *os_handle, CUmemAllocationHandleType type);

  // Arrays, IPC, host registration, external memory (sim_objects.cpp).
  CUresult create_array(size_t bytes, bool mipmapped, void **out);
  CUresult destroy_array(void *array, bool mipmapped);
  CUresult ipc_get_handle(CUipcMemHandle *handle, CUdeviceptr address);
  CUresult ipc_open(CUdeviceptr *address, const CUipcMemHandle &handle);
  CUresult register_host(void *pointer, size_t bytes);
  CUresult unregister_host(void *pointer);
  CUresult import_external(CUexternalMemory *out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *desc);
  CUresult map_external_buffer(CUdeviceptr *address, CUexternalMemory memory,
                               const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *desc);
  CUresult destroy_external(CUexternalMemory memory);

 private:
  SimDriver();
  // Allocation and free under the calling thread's shard alone; kUnderWholeLock where the
  // call needs the whole lock (a shard out of granted capacity, memory the host could not
  // give, a pool that is not usable: anything that fails): the caller then does it all again
  // under it, which also decides which error comes first.
  static constexpr CUresult kUnderWholeLock = static_cast<CUresult>(-1);
  CUresult allocate_in_own_shard(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool);
  CUresult release_in_shards(uint64_t address, std::initializer_list<MemoryKind> allowed);
  CUresult allocate_locked(size_t bytes, MemoryKind kind, uint64_t *address, SimPool *pool, bool in_context);
  CUresult release_locked(uint64_t address, std::initializer_list<MemoryKind> allowed);
  void free_context_memory_locked(SimContext *ctx);
  // A context ends: its storage is taken out under the lock, and the destructors run after
  // the lock is released (they call back into the driver).
  static std::vector<StorageEntry> take_storage_locked(SimContext *ctx);
  static void run_storage_destructors(CUcontext ctx, const std::vector<StorageEntry> &entries);
  void release_physical_if_unused_locked(SimPhysical *physical);
  bool vmm_range_accessible_locked(uint64_t address, size_t bytes) const;
  CUresult checked_context_locked(SimContext **out) const;
  bool context_valid_locked(CUcontext ctx) const;

  mutable DriverLock driver_lock_;
  bool initialized_ = false;
  // initialized_ once it holds for good (cleared only in a forked child, before anything runs
  // there): init() reads it without the lock, which is every one of the driver's shards.
  std::atomic<bool> initialized_for_good_{false};
  int device_count_ = 1;
  std::vector<int> gpus_;        // each device's node GPU, as CUDA_VISIBLE_DEVICES orders them
  bool reuse_contexts_ = false;  // LEASEGUARD_SIM_REUSE_CONTEXTS: see create_context
  int destroy_linger_ms_ = 0;    // LEASEGUARD_SIM_DESTROY_LINGER_MS: see linger_after_destroy
  // LEASEGUARD_SIM_FORKED_CHILD=inherits: a child forked after cuInit goes on with a copy of
  // its parent's device, which no driver allows (tests of what the tool records per process).
  bool forked_child_inherits_ = false;
  bool forked_after_init_ = false;  // this process is such a child, refused as the driver refuses it
  uint64_t last_context_id_ = 0;
  size_t capacity_ = 0;

  // Device memory in use, counted exactly against capacity_ without a counter every thread
  // writes: each shard is granted capacity in steps (grant_step_) from what no shard holds
  // (ungranted_) and charges its allocations to its grant; a shard that cannot get enough
  // leaves the call to the whole lock, which takes every unused grant back and decides on
  // the true total. So capacity_ = ungranted_ + the shards' grants + whole_used_ (arrays and
  // VMM memory, charged under the whole lock). Every charge is also published for the
  // simulator's NVML (sim_usage.h), in the shard's own row.
  struct alignas(64) AllocationShard {
    std::unordered_map<uint64_t, SimAllocation> allocations;  // by address
    size_t used = 0;
    size_t granted = 0;  // >= used
  };
  std::array<AllocationShard, DriverLock::kShards> shards_;
  std::atomic<size_t> ungranted_{0};
  size_t grant_step_ = 0;
  size_t whole_used_ = 0;
  // With the shard's lock (or the whole lock) held: false if its grant cannot cover `bytes`.
  bool charge_in_shard(size_t shard, int device, size_t bytes);
  void refund_in_shard(size_t shard, int device, size_t bytes);
  // With the whole lock held.
  size_t used_locked() const;
  bool fits_locked(size_t bytes) const { return bytes <= capacity_ && used_locked() <= capacity_ - bytes; }
  void take_back_grants_locked();
  void charge_shard_locked(size_t shard, int device, size_t bytes);  // after fits_locked(bytes)
  void charge_locked(int device, size_t bytes);                      // after fits_locked(bytes)
  void refund_locked(int device, size_t bytes);
  // An allocation and where it is, or {kShards, nullptr}.
  struct Found {
    size_t shard = DriverLock::kShards;
    const SimAllocation *allocation = nullptr;
  };
  Found find_allocation_locked(uint64_t address) const;
  // Adds an allocation to shard `shard`'s table and its context's list there, with that
  // shard's lock or the whole lock held (charged already, if it takes capacity).
  void add_allocation_locked(size_t shard, uint64_t address, const SimAllocation &allocation);
  // Calls visit(address, allocation) for every allocation until it returns true.
  template <typename Visit>
  void for_each_allocation_locked(Visit visit) const {
    for (const AllocationShard &shard : shards_)
      for (const auto &[address, allocation] : shard.allocations)
        if (visit(address, allocation)) return;
  }

  ClearedVector<SimContext *> contexts_;    // never deleted: handles stay comparable (or are reused on request)
  ClearedVector<SimContext *> primaries_;   // one per device
  ClearedVector<SimPool *> default_pools_;  // one per device
  ClearedVector<SimPool *> pools_;          // every pool ever made; never deleted
  std::unordered_map<uint64_t, SimPhysical *> physicals_;  // by handle value
  std::map<uint64_t, size_t> reservations_;                // base -> size
  std::map<uint64_t, SimMapping> mappings_;                // base -> mapping
  std::unordered_map<void *, SimArray *> arrays_;
  std::map<uint64_t, SimRegistration> registrations_;  // host base -> registration
  std::unordered_map<void *, SimExternalMemory *> external_;
};

}  // namespace leaseguard::sim
