/* Every allocation family beyond cuMemAlloc, each with a balanced use (nothing leaks) and a
 * leak of a distinctive size, so the test can match every leak to its family:
 *   VMM:        a physical handle never released (4 MiB), a reserved range never freed
 *               (6 MiB), a retained handle reference never released (0 bytes), host-located
 *               memory (device -1), and a failed cuMemCreate whose handle stays unset;
 *   pools:      a pool never destroyed, and a pool destroyed with 3000 bytes outstanding
 *               (that allocation leaks);
 *   arrays:     cuArrayCreate_v2 (16000 bytes), cuArrayCreate (64), cuMipmappedArrayCreate (585);
 *   host registration of 8192 bytes never undone;
 *   external memory: an imported object (65536) and a buffer mapped from it (4096);
 *   IPC (leak mode only): a child process opens its parent's allocation and never closes it,
 *               and tries cuMemFree on it, which the driver refuses.
 * Usage: resource_families [leak|reclaim]. In reclaim mode everything happens inside a lease
 * with policy reclaim; after it ends the device memory must be back, the registration gone,
 * and every late release must succeed. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leaseguard/leaseguard.h"
#include "victim.h"

#define GRANULE ((size_t)2 << 20)

static CUmemAllocationProp device_prop(unsigned handle_types) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = (CUmemAllocationHandleType)handle_types;
  return prop;
}

static void make_accessible(CUdeviceptr at, size_t size) {
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(cuMemSetAccess(at, size, &access, 1));
}

static size_t device_memory_used(void) {
  size_t free_bytes = 0, total = 0;
  CHECK(cuMemGetInfo_v2(&free_bytes, &total));
  return total - free_bytes;
}

/* Nothing leaks: PyTorch's expandable-segment pattern (map, then release the handle at once). */
static VICTIM_NOINLINE void vmm_balanced(void) {
  CUmemAllocationProp prop = device_prop(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle handle, imported;
  CUdeviceptr range;
  int fd;
  CHECK(cuMemCreate(&handle, GRANULE, &prop, 0));
  CHECK(cuMemAddressReserve(&range, 2 * GRANULE, 0, 0, 0));
  CHECK(cuMemMap(range, GRANULE, 0, handle, 0));
  make_accessible(range, GRANULE);
  CHECK(cuMemsetD8_v2(range, 1, GRANULE));
  CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CHECK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  CHECK(cuMemRelease(imported));
  CHECK(cuMemRelease(handle));
  CHECK(cuMemUnmap(range, GRANULE));
  CHECK(cuMemAddressFree(range, 2 * GRANULE));
}

static VICTIM_NOINLINE CUmemGenericAllocationHandle leak_vmm_handle(void) {
  CUmemAllocationProp prop = device_prop(0);
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemCreate(&handle, 2 * GRANULE, &prop, 0));
  return handle;
}

/* The handle is released, but the range stays reserved with the memory mapped in it. */
static VICTIM_NOINLINE CUdeviceptr leak_vmm_range(void) {
  CUmemAllocationProp prop = device_prop(0);
  CUmemGenericAllocationHandle handle;
  CUdeviceptr range;
  CHECK(cuMemCreate(&handle, GRANULE, &prop, 0));
  CHECK(cuMemAddressReserve(&range, 3 * GRANULE, 0, 0, 0));
  CHECK(cuMemMap(range + GRANULE, GRANULE, 0, handle, 0));
  make_accessible(range + GRANULE, GRANULE);
  CHECK(cuMemRelease(handle));
  return range;
}

/* A reference taken with cuMemRetainAllocationHandle and never released keeps the memory. */
static VICTIM_NOINLINE CUmemGenericAllocationHandle leak_vmm_retained(void) {
  CUmemAllocationProp prop = device_prop(0);
  CUmemGenericAllocationHandle handle, retained;
  CUdeviceptr range;
  CHECK(cuMemCreate(&handle, GRANULE, &prop, 0));
  CHECK(cuMemAddressReserve(&range, GRANULE, 0, 0, 0));
  CHECK(cuMemMap(range, GRANULE, 0, handle, 0));
  CHECK(cuMemRetainAllocationHandle(&retained, (void *)range));
  CHECK(cuMemRelease(handle));
  CHECK(cuMemUnmap(range, GRANULE));
  CHECK(cuMemAddressFree(range, GRANULE));
  return retained;
}

/* NCCL and llama.cpp allocate host-located VMM memory; the location id is a NUMA node (here
 * garbage), never a device. A failed create leaves the handle unset: nothing is recorded. */
static VICTIM_NOINLINE CUmemGenericAllocationHandle leak_vmm_host_located(void) {
  CUmemAllocationProp prop = device_prop(0);
  CUmemGenericAllocationHandle handle, never_set;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 0x7eadbeef;
  CHECK(cuMemCreate(&handle, GRANULE, &prop, 0));
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 99;
  if (cuMemCreate(&never_set, GRANULE, &prop, 0) != CUDA_ERROR_INVALID_DEVICE) exit(20);
  return handle;
}

static CUmemPoolProps pool_props(void) {
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  return props;
}

static VICTIM_NOINLINE void pool_balanced(void) {
  CUmemPoolProps props = pool_props();
  CUmemoryPool pool;
  CUdeviceptr pointer;
  CHECK(cuMemPoolCreate(&pool, &props));
  CHECK(cuMemAllocFromPoolAsync(&pointer, 1000, pool, NULL));
  CHECK(cuMemFreeAsync(pointer, NULL));
  CHECK(cuMemPoolDestroy(pool));
}

static VICTIM_NOINLINE CUmemoryPool leak_pool(void) {
  CUmemPoolProps props = pool_props();
  CUmemoryPool pool;
  CHECK(cuMemPoolCreate(&pool, &props));
  return pool;
}

static VICTIM_NOINLINE CUdeviceptr leak_from_destroyed_pool(void) {
  CUmemPoolProps props = pool_props();
  CUmemoryPool pool;
  CUdeviceptr pointer;
  CHECK(cuMemPoolCreate(&pool, &props));
  CHECK(cuMemAllocFromPoolAsync(&pointer, 3000, pool, NULL));
  CHECK(cuMemPoolDestroy(pool)); /* the driver keeps the pool until `pointer` is freed */
  return pointer;
}

static VICTIM_NOINLINE void arrays_balanced(void) {
  CUDA_ARRAY3D_DESCRIPTOR volume;
  CUDA_ARRAY3D_DESCRIPTOR_v1 legacy;
  CUarray array;
  memset(&volume, 0, sizeof volume);
  volume.Width = 16;
  volume.Height = 16;
  volume.Depth = 4;
  volume.Format = CU_AD_FORMAT_HALF;
  volume.NumChannels = 2;
  CHECK(cuArray3DCreate_v2(&array, &volume));
  CHECK(cuArrayDestroy(array));
  memset(&legacy, 0, sizeof legacy);
  legacy.Width = 32;
  legacy.Format = CU_AD_FORMAT_UNSIGNED_INT32;
  legacy.NumChannels = 1;
  CHECK(cuArray3DCreate(&array, &legacy));
  CHECK(cuArrayDestroy(array));
}

static VICTIM_NOINLINE CUarray leak_array_v2(void) {
  CUDA_ARRAY_DESCRIPTOR flat;
  CUarray array;
  memset(&flat, 0, sizeof flat);
  flat.Width = 100;
  flat.Height = 10;
  flat.Format = CU_AD_FORMAT_FLOAT;
  flat.NumChannels = 4;
  CHECK(cuArrayCreate_v2(&array, &flat));
  return array;
}

static VICTIM_NOINLINE CUarray leak_array_legacy(void) {
  CUDA_ARRAY_DESCRIPTOR_v1 flat;
  CUarray array;
  memset(&flat, 0, sizeof flat);
  flat.Width = 64;
  flat.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  flat.NumChannels = 1;
  CHECK(cuArrayCreate(&array, &flat));
  return array;
}

static VICTIM_NOINLINE CUmipmappedArray leak_mipmapped(void) {
  CUDA_ARRAY3D_DESCRIPTOR volume;
  CUmipmappedArray array;
  memset(&volume, 0, sizeof volume);
  volume.Width = 8;
  volume.Height = 8;
  volume.Depth = 8;
  volume.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  volume.NumChannels = 1;
  CHECK(cuMipmappedArrayCreate(&array, &volume, 4)); /* 512 + 64 + 8 + 1 */
  return array;
}

static char g_registered[8192], g_balanced[4096];

static VICTIM_NOINLINE void registration_balanced(void) {
  CHECK(cuMemHostRegister_v2(g_balanced, sizeof g_balanced, 0));
  CHECK(cuMemHostUnregister(g_balanced));
}

static VICTIM_NOINLINE void leak_registration(void) {
  CHECK(cuMemHostRegister_v2(g_registered, sizeof g_registered, 0));
}

static CUexternalMemory import_memfd(size_t size) {
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc;
  CUexternalMemory memory;
  int fd = memfd_create("victim-external", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) exit(21);
  memset(&desc, 0, sizeof desc);
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = size;
  CHECK(cuImportExternalMemory(&memory, &desc));
  return memory;
}

static VICTIM_NOINLINE void external_balanced(void) { CHECK(cuDestroyExternalMemory(import_memfd(1 << 14))); }

static VICTIM_NOINLINE CUdeviceptr leak_external_buffer(CUexternalMemory memory) {
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC desc;
  CUdeviceptr kept, freed;
  memset(&desc, 0, sizeof desc);
  desc.size = 8192;
  CHECK(cuExternalMemoryGetMappedBuffer(&freed, memory, &desc));
  CHECK(cuMemFree_v2(freed));
  desc.size = 4096;
  CHECK(cuExternalMemoryGetMappedBuffer(&kept, memory, &desc));
  return kept;
}

static VICTIM_NOINLINE CUexternalMemory leak_external(void) { return import_memfd(1 << 16); }

/* The child opens the parent's allocation twice: closes one mapping, leaks the other (after a
 * cuMemFree the driver refuses, which must not make leaseguard forget the mapping). */
static VICTIM_NOINLINE void ipc_child(CUipcMemHandle handle) {
  CUdeviceptr kept, closed;
  CHECK(cuIpcOpenMemHandle(&closed, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK(cuIpcCloseMemHandle(closed));
  CHECK(cuIpcOpenMemHandle_v2(&kept, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  if (cuMemFree_v2(kept) != CUDA_ERROR_INVALID_VALUE) exit(22);
}

static void ipc(void) {
  CUdeviceptr exported;
  CUipcMemHandle handle;
  int status = 0;
  CHECK(cuMemAlloc_v2(&exported, 5000));
  CHECK(cuIpcGetMemHandle(&handle, exported));
  pid_t child = fork();
  if (child == 0) {
    ipc_child(handle);
    exit(0);
  }
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(23);
  CHECK(cuMemFree_v2(exported));
}

int main(int argc, char **argv) {
  int reclaim = argc > 1 && strcmp(argv[1], "reclaim") == 0;
  victim_primary_context();
  const size_t used_before = device_memory_used();
  leaseguard_lease_t lease = 0;
  if (reclaim) {
    lease = leaseguard_lease_begin("families", 0, LEASEGUARD_RECLAIM);
    if (lease == 0 || leaseguard_lease_enter(lease) != 0) return 10;
  }
  vmm_balanced();
  pool_balanced();
  arrays_balanced();
  registration_balanced();
  external_balanced();
  CUmemGenericAllocationHandle handle = leak_vmm_handle();
  CUdeviceptr range = leak_vmm_range();
  CUmemGenericAllocationHandle retained = leak_vmm_retained();
  CUmemGenericAllocationHandle host_located = leak_vmm_host_located();
  CUmemoryPool pool = leak_pool();
  CUdeviceptr from_destroyed_pool = leak_from_destroyed_pool();
  CUarray array = leak_array_v2();
  CUarray legacy_array = leak_array_legacy();
  CUmipmappedArray mipmapped = leak_mipmapped();
  leak_registration();
  CUexternalMemory external = leak_external();
  CUdeviceptr buffer = leak_external_buffer(external);
  if (!reclaim) {
    ipc();
    return 0;
  }
  leaseguard_lease_leave();
  int leaked = leaseguard_lease_end(lease);
  if (leaked != 12) {
    fprintf(stderr, "lease_end returned %d, not 12\n", leaked);
    return 11;
  }
  if (device_memory_used() != used_before) {
    fprintf(stderr, "%zu bytes still used after reclaim\n", device_memory_used() - used_before);
    return 12;
  }
  /* The registration is gone, so registering the same buffer again succeeds. */
  CHECK(cuMemHostRegister_v2(g_registered, sizeof g_registered, 0));
  CHECK(cuMemHostUnregister(g_registered));
  /* Late releases of what was reclaimed succeed without reaching the driver. */
  CHECK(cuMemRelease(handle));
  CHECK(cuMemAddressFree(range, 3 * GRANULE));
  CHECK(cuMemRelease(retained));
  CHECK(cuMemRelease(host_located));
  CHECK(cuMemPoolDestroy(pool));
  CHECK(cuMemFreeAsync(from_destroyed_pool, NULL));
  CHECK(cuArrayDestroy(array));
  CHECK(cuArrayDestroy(legacy_array));
  CHECK(cuMipmappedArrayDestroy(mipmapped));
  CHECK(cuMemFree_v2(buffer));
  CHECK(cuDestroyExternalMemory(external));
  printf("reclaimed every family\n");
  return 0;
}
