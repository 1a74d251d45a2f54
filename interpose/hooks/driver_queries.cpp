// Implementation of the driver queries the hooks need.
#include "driver_queries.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <iterator>

#include "code_generation.h"
#include "journal_format.h"
#include "real_dlsym.h"

namespace leaseguard::interpose {
namespace {

// The loaded driver of each vendor, once found: index 0 CUDA, 1 HIP.
std::atomic<void *> g_driver_handles[2] = {};

// The driver's names as the loader knows them (DT_SONAME): what the program loaded, by
// whichever path or handle.
constexpr const char *kCudaDrivers[] = {"libcuda.so.1"};
constexpr const char *kHipDrivers[] = {"libamdhip64.so.6", "libamdhip64.so.5"};

// The driver that defines `name`. Asked by its soname first, not through the library the
// hook forwards to (`anchor`'s): that may be a shim in between (HAMi-core's libvgpu.so,
// preloaded after leaseguard) defining only the allocation family, which would leave every
// allocation without a device and every context's destruction unseen. The anchor's object
// is the fallback for a driver loaded under another name.
void *driver_handle(void *anchor, const char *name) noexcept {
  const bool hip = name[0] == 'h';  // hip*: every CUDA driver name starts with "cu"
  std::atomic<void *> &cached = g_driver_handles[hip ? 1 : 0];
  void *handle = cached.load(std::memory_order_acquire);
  if (handle != nullptr) return handle;
  if (hip) {
    for (const char *soname : kHipDrivers)
      if ((handle = dlopen(soname, RTLD_NOLOAD | RTLD_LAZY)) != nullptr) break;
  } else {
    for (const char *soname : kCudaDrivers)
      if ((handle = dlopen(soname, RTLD_NOLOAD | RTLD_LAZY)) != nullptr) break;
  }
  // The reference dlopen took is never dropped: the driver stays loaded for the process.
  if (handle == nullptr && anchor != nullptr) handle = handle_of_object_containing(anchor);
  if (handle != nullptr) cached.store(handle, std::memory_order_release);
  return handle;
}

bool any_loaded(const char *const *sonames, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) {
    if (void *handle = dlopen(sonames[i], RTLD_NOLOAD | RTLD_LAZY)) {
      drop_noload_reference(handle);  // only the reference NOLOAD took
      return true;
    }
  }
  return false;
}

void *driver_function(void *anchor, const char *name, std::atomic<void *> &cache) noexcept {
  void *function = cache.load(std::memory_order_acquire);
  if (function != nullptr) return function;
  void *handle = driver_handle(anchor, name);
  if (handle == nullptr) return nullptr;
  function = real_dlsym()(handle, name);
  cache.store(function, std::memory_order_release);
  return function;
}

std::atomic<void *> g_ctx_get_current{nullptr};
std::atomic<void *> g_ctx_get_device{nullptr};
std::atomic<void *> g_primary_get_state{nullptr};
std::atomic<void *> g_primary_retain{nullptr};
std::atomic<void *> g_ctx_get_id{nullptr};
std::atomic<void *> g_device_get_uuid{nullptr};

// The calling thread's current context and its device, as last asked of the driver. A
// destroyed context's handle may be handed out again for another device, and a destroy pops
// the destroying thread's context, so the pair also keeps the generation of context handles
// it was learned in, and any destruction starts a new one.
std::atomic<uint64_t> g_context_generation{0};
struct CurrentContext {
  uint64_t context = 0;
  uint64_t generation = 0;
  int32_t device = -1;
  bool known = false;
};
thread_local CurrentContext t_current __attribute__((tls_model("initial-exec")));

}  // namespace

uint32_t loaded_drivers() noexcept {
  uint32_t drivers = journal::kDriversKnown;
  if (any_loaded(kCudaDrivers, std::size(kCudaDrivers))) drivers |= journal::kDriverCuda;
  if (any_loaded(kHipDrivers, std::size(kHipDrivers))) drivers |= journal::kDriverHip;
  return drivers;
}

size_t loaded_driver_bases(uintptr_t *bases, size_t capacity) noexcept {
  size_t count = 0;
  auto add_from = [&](const char *const *sonames, size_t n) {
    for (size_t i = 0; i < n && count < capacity; ++i) {
      void *handle = dlopen(sonames[i], RTLD_NOLOAD | RTLD_LAZY);
      if (handle == nullptr) continue;
      link_map *map = nullptr;
      if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) bases[count++] = map->l_addr;
      drop_noload_reference(handle);  // only the reference NOLOAD took
    }
  };
  add_from(kCudaDrivers, std::size(kCudaDrivers));
  add_from(kHipDrivers, std::size(kHipDrivers));
  return count;
}

void *driver_symbol(void *anchor, const char *name) noexcept {
  std::atomic<void *> uncached{nullptr};
  return driver_function(anchor, name, uncached);
}

ContextInfo current_context(void *anchor) noexcept {
  // Read before asking: a destruction that overlaps the questions makes the answer stale.
  const uint64_t generation = g_context_generation.load(std::memory_order_acquire);
  CurrentContext &kept = t_current;
  if (kept.known && kept.generation == generation) return ContextInfo{kept.context, kept.device};
  ContextInfo info;
  auto get_current =
      reinterpret_cast<lg_pfn_cuCtxGetCurrent>(driver_function(anchor, "cuCtxGetCurrent", g_ctx_get_current));
  CUcontext context = nullptr;
  if (get_current == nullptr || get_current(&context) != CUDA_SUCCESS || context == nullptr) return info;
  info.context = reinterpret_cast<uint64_t>(context);
  if (kept.context == info.context && kept.generation == generation) {
    // Set current again (a push and a pop, say): the same context, its device known.
    info.device = kept.device;
    kept.known = true;
    return info;
  }
  auto get_device =
      reinterpret_cast<lg_pfn_cuCtxGetDevice>(driver_function(anchor, "cuCtxGetDevice", g_ctx_get_device));
  CUdevice device = -1;
  if (get_device != nullptr && get_device(&device) == CUDA_SUCCESS) {
    info.device = device;
    kept = CurrentContext{info.context, generation, device, true};
  }
  return info;
}

void current_context_changed() noexcept { t_current.known = false; }

void note_device_uuid(Tracker &tracker, int32_t device, void *anchor) noexcept {
  // cuDeviceGetUuid_v2 where the driver has it (CUDA 11.4 on), else the first one: the same
  // bytes for a GPU, a MIG instance's own under _v2.
  auto get_uuid =
      reinterpret_cast<lg_pfn_cuDeviceGetUuid_v2>(driver_function(anchor, "cuDeviceGetUuid_v2", g_device_get_uuid));
  if (get_uuid == nullptr)
    get_uuid = reinterpret_cast<lg_pfn_cuDeviceGetUuid_v2>(driver_symbol(anchor, "cuDeviceGetUuid"));
  CUuuid uuid{};
  unsigned char bytes[16] = {};
  if (get_uuid != nullptr && get_uuid(&uuid, device) == CUDA_SUCCESS) std::memcpy(bytes, uuid.bytes, sizeof bytes);
  tracker.note_device(device, bytes);
}

void context_handles_may_be_reused() noexcept { g_context_generation.fetch_add(1, std::memory_order_acq_rel); }

bool primary_context_active(void *anchor, CUdevice device) noexcept {
  auto get_state = reinterpret_cast<lg_pfn_cuDevicePrimaryCtxGetState>(
      driver_function(anchor, "cuDevicePrimaryCtxGetState", g_primary_get_state));
  unsigned flags = 0;
  int active = 0;
  return get_state != nullptr && get_state(device, &flags, &active) == CUDA_SUCCESS && active != 0;
}

CUcontext active_primary_context(void *anchor, CUdevice device, CUresult (*release)(CUdevice)) noexcept {
  if (!primary_context_active(anchor, device)) return nullptr;
  auto retain = reinterpret_cast<lg_pfn_cuDevicePrimaryCtxRetain>(
      driver_function(anchor, "cuDevicePrimaryCtxRetain", g_primary_retain));
  if (retain == nullptr || release == nullptr) return nullptr;
  // Active means its refcount is positive, so this retain creates nothing and the release
  // destroys nothing: the handle is learned with the driver's state unchanged.
  CUcontext context = nullptr;
  if (retain(&context, device) != CUDA_SUCCESS) return nullptr;
  release(device);
  if (t_current.context == reinterpret_cast<uint64_t>(context)) t_current = CurrentContext{};
  return context;
}

namespace {

lg_pfn_cuCtxGetId context_id_query(void *anchor) noexcept {
  // Older drivers (before CUDA 12.0) have no cuCtxGetId.
  return reinterpret_cast<lg_pfn_cuCtxGetId>(driver_function(anchor, "cuCtxGetId", g_ctx_get_id));
}

}  // namespace

uint64_t context_id(void *anchor, CUcontext context) noexcept {
  auto get_id = context_id_query(anchor);
  unsigned long long id = 0;
  if (get_id == nullptr || context == nullptr || get_id(context, &id) != CUDA_SUCCESS) return 0;
  return id;
}

bool primary_context_destroyed(void *anchor, CUdevice device, CUcontext primary, uint64_t id_before) noexcept {
  if (!primary_context_active(anchor, device)) return true;
  auto get_id = context_id_query(anchor);
  if (id_before == 0 || get_id == nullptr) return false;
  // Asked of the handle itself: looking the primary up again would mean retaining and
  // releasing it, which could make and destroy a context of its own if the program's last
  // reference went meanwhile.
  unsigned long long id_now = 0;
  const CUresult status = get_id(primary, &id_now);
  if (status == CUDA_SUCCESS) return id_now != id_before;
  // The handle names no live context, though the device has an active primary: a new one,
  // under another handle.
  return status == CUDA_ERROR_INVALID_CONTEXT || status == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

}  // namespace leaseguard::interpose
