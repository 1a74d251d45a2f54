/* The HIP allocation family, built against the HIP headers (libamdhip64-dev) and linked
 * with -lamdhip64 like any HIP application. Usage: hip_families [leak|reclaim|real]
 *   leak:    each entry point frees one allocation and leaks one of a distinctive size (the
 *            test matches every leak to its entry point); hipMalloc of 0 bytes and
 *            hipFree(NULL) succeed and record nothing; two allocations made before a
 *            hipDeviceReset are freed by it; a forked child leaks an IPC mapping;
 *   reclaim: the leaks happen inside a lease with policy reclaim, which gives them all back;
 *   real:    for the real libamdhip64 on a machine without an AMD GPU: calls each entry
 *            point once and prints the status it got, so a test can compare them with and
 *            without leaseguard. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hip_victim.h"
#include "leaseguard/annotate.h" /* weak: the real-runtime run has no leaseguard at all */

#define GRANULE ((size_t)2 << 20)

static NOINLINE void *leak_hipMalloc(void) {
  void *kept, *freed, *empty = (void *)1;
  CHECK(hipMalloc(&freed, 4096));
  CHECK(hipFree(freed));
  CHECK(hipMalloc(&empty, 0)); /* succeeds with NULL: nothing to record */
  if (empty != NULL) exit(20);
  CHECK(hipFree(NULL));
  CHECK(hipMalloc(&kept, 1000));
  return kept;
}

static NOINLINE void *leak_hipExtMallocWithFlags(void) {
  void *kept, *freed;
  CHECK(hipExtMallocWithFlags(&freed, 4096, hipDeviceMallocDefault));
  CHECK(hipFree(freed));
  CHECK(hipExtMallocWithFlags(&kept, 1016, hipDeviceMallocDefault));
  return kept;
}

static NOINLINE void *leak_hipMallocManaged(void) {
  void *kept, *freed;
  CHECK(hipMallocManaged(&freed, 4096, hipMemAttachGlobal));
  CHECK(hipFree(freed));
  CHECK(hipMallocManaged(&kept, 1032, hipMemAttachGlobal));
  return kept;
}

static NOINLINE void *leak_hipMallocPitch(void) {
  void *kept, *freed;
  size_t pitch;
  CHECK(hipMallocPitch(&freed, &pitch, 100, 4));
  CHECK(hipFree(freed));
  CHECK(hipMallocPitch(&kept, &pitch, 100, 3)); /* 3 rows of 512 bytes */
  return kept;
}

static NOINLINE void *leak_hipMemAllocPitch(void) {
  hipDeviceptr_t kept, freed;
  size_t pitch;
  CHECK(hipMemAllocPitch(&freed, &pitch, 100, 4, 4));
  CHECK(hipFree(freed));
  CHECK(hipMemAllocPitch(&kept, &pitch, 100, 5, 4)); /* 5 rows of 512 bytes */
  return kept;
}

static NOINLINE void *leak_hipMalloc3D(void) {
  hipPitchedPtr kept, freed;
  hipExtent extent = {100, 2, 3};
  CHECK(hipMalloc3D(&freed, extent));
  CHECK(hipFree(freed.ptr));
  CHECK(hipMalloc3D(&kept, extent)); /* 512-byte rows, 2 x 3 of them */
  return kept.ptr;
}

static NOINLINE hipArray_t leak_hipMallocArray(void) {
  hipArray_t kept, freed;
  hipChannelFormatDesc desc = {32, 0, 0, 0, hipChannelFormatKindFloat};
  CHECK(hipMallocArray(&freed, &desc, 10, 10, hipArrayDefault));
  CHECK(hipFreeArray(freed));
  CHECK(hipMallocArray(&kept, &desc, 10, 10, hipArrayDefault)); /* 400 bytes */
  return kept;
}

static NOINLINE hipArray_t leak_hipMalloc3DArray(void) {
  hipArray_t kept, freed;
  hipChannelFormatDesc desc = {8, 8, 8, 8, hipChannelFormatKindUnsigned};
  hipExtent extent = {4, 4, 4};
  CHECK(hipMalloc3DArray(&freed, &desc, extent, 0));
  CHECK(hipFreeArray(freed));
  CHECK(hipMalloc3DArray(&kept, &desc, extent, 0)); /* 256 bytes */
  return kept;
}

static NOINLINE hipArray_t leak_hipArrayCreate(void) {
  hipArray_t kept, freed;
  HIP_ARRAY_DESCRIPTOR desc;
  memset(&desc, 0, sizeof desc);
  desc.Width = 16;
  desc.Height = 8;
  desc.Format = HIP_AD_FORMAT_UNSIGNED_INT8;
  desc.NumChannels = 1;
  CHECK(hipArrayCreate(&freed, &desc));
  CHECK(hipArrayDestroy(freed));
  CHECK(hipArrayCreate(&kept, &desc)); /* 128 bytes */
  return kept;
}

static NOINLINE hipArray_t leak_hipArray3DCreate(void) {
  hipArray_t kept, freed;
  HIP_ARRAY3D_DESCRIPTOR desc;
  memset(&desc, 0, sizeof desc);
  desc.Width = 4;
  desc.Height = 4;
  desc.Depth = 3;
  desc.Format = HIP_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CHECK(hipArray3DCreate(&freed, &desc));
  CHECK(hipArrayDestroy(freed));
  CHECK(hipArray3DCreate(&kept, &desc)); /* 192 bytes */
  return kept;
}

static NOINLINE void *leak_hipHostMalloc(void) {
  void *kept, *freed;
  CHECK(hipHostMalloc(&freed, 4096, hipHostMallocDefault));
  CHECK(hipHostFree(freed));
  CHECK(hipHostMalloc(&kept, 1048, hipHostMallocDefault));
  return kept;
}

static NOINLINE void *leak_hipHostAlloc(void) {
  void *kept, *freed;
  CHECK(hipHostAlloc(&freed, 4096, 0));
  CHECK(hipHostFree(freed));
  CHECK(hipHostAlloc(&kept, 1064, 0));
  return kept;
}

static NOINLINE void *leak_hipMallocHost(void) {
  void *kept, *freed;
  CHECK(hipMallocHost(&freed, 4096));
  CHECK(hipFreeHost(freed));
  CHECK(hipMallocHost(&kept, 1080));
  return kept;
}

static NOINLINE void *leak_hipMemAllocHost(void) {
  void *kept, *freed;
  CHECK(hipMemAllocHost(&freed, 4096));
  CHECK(hipFreeHost(freed));
  CHECK(hipMemAllocHost(&kept, 1096));
  return kept;
}

static NOINLINE void *leak_hipMallocAsync(void) {
  void *kept, *freed;
  CHECK(hipMallocAsync(&freed, 4096, NULL));
  CHECK(hipFreeAsync(freed, NULL));
  CHECK(hipMallocAsync(&kept, 1112, NULL));
  return kept;
}

static hipMemPoolProps pool_props(void) {
  hipMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = hipMemAllocationTypePinned;
  props.location.type = hipMemLocationTypeDevice;
  props.location.id = 0;
  return props;
}

static NOINLINE hipMemPool_t leak_hipMemPoolCreate(void) {
  hipMemPoolProps props = pool_props();
  hipMemPool_t kept, freed;
  CHECK(hipMemPoolCreate(&freed, &props));
  CHECK(hipMemPoolDestroy(freed));
  CHECK(hipMemPoolCreate(&kept, &props));
  return kept;
}

static NOINLINE void *leak_hipMallocFromPoolAsync(hipMemPool_t pool) {
  void *kept, *freed;
  CHECK(hipMallocFromPoolAsync(&freed, 4096, pool, NULL));
  CHECK(hipFreeAsync(freed, NULL));
  CHECK(hipMallocFromPoolAsync(&kept, 1128, pool, NULL));
  return kept;
}

static hipMemAllocationProp vmm_prop(void) {
  hipMemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = 0;
  return prop;
}

static NOINLINE hipMemGenericAllocationHandle_t leak_hipMemCreate(void) {
  hipMemAllocationProp prop = vmm_prop();
  hipMemGenericAllocationHandle_t kept, freed;
  CHECK(hipMemCreate(&freed, GRANULE, &prop, 0));
  CHECK(hipMemRelease(freed));
  CHECK(hipMemCreate(&kept, 2 * GRANULE, &prop, 0));
  return kept;
}

/* The handle is released once mapped; the range, with the memory mapped in it, leaks. */
static NOINLINE void *leak_hipMemAddressReserve(void) {
  hipMemAllocationProp prop = vmm_prop();
  hipMemGenericAllocationHandle_t handle;
  hipMemAccessDesc access;
  void *kept, *freed;
  CHECK(hipMemAddressReserve(&freed, GRANULE, 0, NULL, 0));
  CHECK(hipMemAddressFree(freed, GRANULE));
  CHECK(hipMemCreate(&handle, GRANULE, &prop, 0));
  CHECK(hipMemAddressReserve(&kept, 3 * GRANULE, 0, NULL, 0));
  CHECK(hipMemMap(kept, GRANULE, 0, handle, 0));
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = hipMemAccessFlagsProtReadWrite;
  CHECK(hipMemSetAccess(kept, GRANULE, &access, 1));
  CHECK(hipMemset(kept, 7, GRANULE));
  CHECK(hipMemRelease(handle));
  return kept;
}

static char g_registered[8192], g_balanced[4096];

static NOINLINE void leak_hipHostRegister(void) {
  CHECK(hipHostRegister(g_balanced, sizeof g_balanced, 0));
  CHECK(hipHostUnregister(g_balanced));
  CHECK(hipHostRegister(g_registered, sizeof g_registered, 0));
}

/* Freed by hipDeviceReset (reported as leaks at the reset, not at exit). */
static NOINLINE void reset_frees_these(void) {
  void *first, *second;
  CHECK(hipMalloc(&first, 7000));
  CHECK(hipHostMalloc(&second, 7016, 0));
  CHECK(hipDeviceReset());
}

static NOINLINE void ipc_child(hipIpcMemHandle_t handle) {
  void *kept, *closed;
  CHECK(hipIpcOpenMemHandle(&closed, handle, hipIpcMemLazyEnablePeerAccess));
  CHECK(hipIpcCloseMemHandle(closed));
  CHECK(hipIpcOpenMemHandle(&kept, handle, hipIpcMemLazyEnablePeerAccess));
}

static void ipc(void) {
  void *exported;
  hipIpcMemHandle_t handle;
  int status = 0;
  CHECK(hipMalloc(&exported, 5000));
  CHECK(hipIpcGetMemHandle(&handle, exported));
  pid_t child = fork();
  if (child == 0) {
    ipc_child(handle);
    exit(0);
  }
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(23);
  CHECK(hipFree(exported));
}

/* What every HIP program does around its allocations: copies, a synchronize, error names. */
static void round_trip(void) {
  void *device;
  unsigned out[4] = {1, 2, 3, 4}, back[4] = {0};
  CHECK(hipMalloc(&device, sizeof out));
  CHECK(hipMemcpy(device, out, sizeof out, hipMemcpyHostToDevice));
  CHECK(hipDeviceSynchronize());
  CHECK(hipMemcpy(back, device, sizeof back, hipMemcpyDeviceToHost));
  if (memcmp(out, back, sizeof out) != 0) exit(24);
  if (hipMemcpy(back, device, 2 * sizeof back, hipMemcpyDeviceToHost) != hipErrorInvalidValue) exit(25);
  if (strcmp(hipGetErrorName(hipErrorInvalidValue), "hipErrorInvalidValue") != 0) exit(26);
  if (hipGetErrorString(hipErrorOutOfMemory) == NULL) exit(27);
  CHECK(hipFree(device));
}

/* The real runtime without a GPU: every call fails; print what each returned. */
static int real_runtime(void) {
  void *pointer = NULL;
  hipArray_t array = NULL;
  hipChannelFormatDesc desc = {32, 0, 0, 0, hipChannelFormatKindFloat};
  hipMemPoolProps props = pool_props();
  hipMemPool_t pool = NULL;
  hipMemAllocationProp prop = vmm_prop();
  hipMemGenericAllocationHandle_t handle = NULL;
  int count = -1;
  printf("hipGetDeviceCount=%d\n", (int)hipGetDeviceCount(&count));
  printf("hipMalloc=%d\n", (int)hipMalloc(&pointer, 4096));
  printf("hipMallocManaged=%d\n", (int)hipMallocManaged(&pointer, 4096, hipMemAttachGlobal));
  printf("hipHostMalloc=%d\n", (int)hipHostMalloc(&pointer, 4096, 0));
  printf("hipMallocArray=%d\n", (int)hipMallocArray(&array, &desc, 16, 16, 0));
  printf("hipMallocAsync=%d\n", (int)hipMallocAsync(&pointer, 4096, NULL));
  printf("hipMemPoolCreate=%d\n", (int)hipMemPoolCreate(&pool, &props));
  printf("hipMemCreate=%d\n", (int)hipMemCreate(&handle, GRANULE, &prop, 0));
  printf("hipFree=%d\n", (int)hipFree(NULL));
  printf("hipDeviceReset=%d\n", (int)hipDeviceReset());
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "leak";
  if (strcmp(mode, "real") == 0) return real_runtime();
  const int reclaim = strcmp(mode, "reclaim") == 0;
  int count = 0;
  CHECK(hipGetDeviceCount(&count));
  CHECK(hipSetDevice(0));
  round_trip();
  size_t free_before = 0, total = 0;
  if (!reclaim) reset_frees_these();
  CHECK(hipMemGetInfo(&free_before, &total));
  leaseguard_lease_t lease = 0;
  if (reclaim) {
    lease = LEASEGUARD_LEASE_BEGIN("hip", 0, LEASEGUARD_RECLAIM);
    if (lease == 0 || LEASEGUARD_LEASE_ENTER(lease) != 0) return 10;
  }
  void *kept[32];
  int n = 0;
  kept[n++] = leak_hipMalloc();
  kept[n++] = leak_hipExtMallocWithFlags();
  kept[n++] = leak_hipMallocManaged();
  kept[n++] = leak_hipMallocPitch();
  kept[n++] = leak_hipMemAllocPitch();
  kept[n++] = leak_hipMalloc3D();
  kept[n++] = leak_hipMallocArray();
  kept[n++] = leak_hipMalloc3DArray();
  kept[n++] = leak_hipArrayCreate();
  kept[n++] = leak_hipArray3DCreate();
  kept[n++] = leak_hipHostMalloc();
  kept[n++] = leak_hipHostAlloc();
  kept[n++] = leak_hipMallocHost();
  kept[n++] = leak_hipMemAllocHost();
  kept[n++] = leak_hipMallocAsync();
  hipMemPool_t pool = leak_hipMemPoolCreate();
  kept[n++] = pool;
  kept[n++] = leak_hipMallocFromPoolAsync(pool);
  kept[n++] = leak_hipMemCreate();
  kept[n++] = leak_hipMemAddressReserve();
  leak_hipHostRegister();
  if (!reclaim) {
    ipc();
    printf("hip_families leaked %d\n", n + 1);
    return 0;
  }
  LEASEGUARD_LEASE_LEAVE();
  int leaked = LEASEGUARD_LEASE_END(lease);
  if (leaked != n + 1) {
    fprintf(stderr, "lease_end returned %d, not %d\n", leaked, n + 1);
    return 11;
  }
  size_t free_after = 0;
  CHECK(hipMemGetInfo(&free_after, &total));
  if (free_after != free_before) {
    fprintf(stderr, "%zu bytes not given back\n", free_before - free_after);
    return 12;
  }
  CHECK(hipHostRegister(g_registered, sizeof g_registered, 0)); /* the registration is gone */
  CHECK(hipHostUnregister(g_registered));
  CHECK(hipFree(kept[0])); /* late frees succeed without reaching the runtime */
  CHECK(hipFreeArray((hipArray_t)kept[6]));
  CHECK(hipMemPoolDestroy(pool));
  printf("reclaimed every HIP family\n");
  return 0;
}
