/* Calls the hooks the way buggy and unusual programs do. Usage: robustness MODE
 *   calls:     NULL out-parameters, zero-size requests, frees of NULL, a double free, a free
 *              of an address inside an allocation (which stays live and leaks 2222 bytes),
 *              managed memory and legacy allocations freed with cuMemFree_v2. Every status
 *              is printed, so a test can compare them with and without leaseguard.
 *   reenter:   with LEASEGUARD_SIM_REENTER=1 the driver builds cuMemAllocManaged on its own
 *              exported cuMemAlloc_v2; one 3333-byte leak must be recorded once.
 *   signal:    a SIGUSR1 handler allocates (and leaks 4321 bytes) three times.
 *   exit_race: four threads allocate and free while the main thread calls exit(); each
 *              thread leaked one 5555-byte buffer first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

#define SHOW(call) printf("%s = %d\n", #call, (int)(call))

static void calls(void) {
  CUdeviceptr pointer = 0xdead00, inside;
  size_t pitch = 0;
  CUarray array = NULL;
  CUmemGenericAllocationHandle handle = 0;
  CUmemoryPool pool = NULL;
  CUDA_ARRAY_DESCRIPTOR desc;
  CUmemAllocationProp prop;
  CUmemPoolProps pool_props;
  memset(&desc, 0, sizeof desc);
  desc.Width = 16;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  memset(&pool_props, 0, sizeof pool_props);
  pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  pool_props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  /* NULL out-parameters: the driver rejects them; the hook never reads them. */
  SHOW(cuMemAlloc_v2(NULL, 64));
  SHOW(cuMemAllocPitch_v2(&pointer, NULL, 100, 2, 4));
  SHOW(cuMemAllocHost_v2(NULL, 64));
  SHOW(cuMemCreate(NULL, 2 << 20, &prop, 0));
  SHOW(cuMemCreate(&handle, 2 << 20, NULL, 0));
  SHOW(cuMemAddressReserve(NULL, 2 << 20, 0, 0, 0));
  SHOW(cuArrayCreate_v2(NULL, &desc));
  SHOW(cuArrayCreate_v2(&array, NULL));
  SHOW(cuMemPoolCreate(NULL, &pool_props));
  SHOW(cuMemPoolCreate(&pool, NULL));
  SHOW(cuMemHostRegister_v2(NULL, 64, 0));
  SHOW(cuImportExternalMemory(NULL, NULL));
  /* Zero-size requests. */
  SHOW(cuMemAlloc_v2(&pointer, 0));
  SHOW(cuMemAllocHost_v2((void **)&pointer, 0));
  SHOW(cuMemAllocManaged(&pointer, 0, CU_MEM_ATTACH_GLOBAL));
  printf("pointer untouched: %d\n", pointer == 0xdead00);
  /* Frees of NULL. */
  SHOW(cuMemFree_v2(0));
  SHOW(cuMemFreeHost(NULL));
  SHOW(cuArrayDestroy(NULL));
  SHOW(cuMemRelease(0));
  /* A double free: forwarded, and the driver's status returned. */
  CHECK(cuMemAlloc_v2(&pointer, 1111));
  SHOW(cuMemFree_v2(pointer));
  SHOW(cuMemFree_v2(pointer));
  /* A free of an address inside an allocation: the driver refuses; the allocation leaks. */
  CHECK(cuMemAlloc_v2(&inside, 2222));
  SHOW(cuMemFree_v2(inside + 256));
  /* Managed memory freed with cuMemFree_v2, a legacy allocation freed with the _v2 free. */
  CHECK(cuMemAllocManaged(&pointer, 4096, CU_MEM_ATTACH_GLOBAL));
  SHOW(cuMemFree_v2(pointer));
  CUdeviceptr_v1 legacy;
  CHECK(cuMemAlloc(&legacy, 4096));
  SHOW(cuMemFree_v2(legacy));
  SHOW(cuMemAllocPitch_v2(&pointer, &pitch, 100, 2, 4));
  SHOW(cuMemFree_v2(pointer));
}

static VICTIM_NOINLINE void reenter(void) {
  CUdeviceptr pointer;
  CHECK(cuMemAllocManaged(&pointer, 3333, CU_MEM_ATTACH_GLOBAL));
}

static VICTIM_NOINLINE void allocate_in_handler(int signal_number) {
  (void)signal_number;
  CUdeviceptr pointer;
  if (cuMemAlloc_v2(&pointer, 4321) != CUDA_SUCCESS) _exit(40);
}

static void signal_allocates(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = allocate_in_handler;
  sigaction(SIGUSR1, &action, NULL);
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr pointer;
    CHECK(cuMemAlloc_v2(&pointer, 64));
    raise(SIGUSR1);
    CHECK(cuMemFree_v2(pointer));
  }
}

static CUcontext g_context;

static VICTIM_NOINLINE void thread_leak(void) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, 5555));
}

static void *churn(void *started) {
  CHECK(cuCtxSetCurrent(g_context));
  thread_leak();
  __atomic_add_fetch((int *)started, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    CUdeviceptr pointer;
    if (cuMemAlloc_v2(&pointer, 100) == CUDA_SUCCESS) cuMemFree_v2(pointer);
  }
  return NULL;
}

static void exit_race(void) {
  static int started = 0;
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, churn, &started);
  while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 4) usleep(1000);
  usleep(20000);
  printf("exiting while threads allocate\n");
  fflush(stdout);
  exit(0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "calls";
  g_context = victim_primary_context();
  if (strcmp(mode, "calls") == 0) calls();
  else if (strcmp(mode, "reenter") == 0) reenter();
  else if (strcmp(mode, "signal") == 0) signal_allocates();
  else if (strcmp(mode, "exit_race") == 0) exit_race();
  else return 2;
  printf("robustness %s done\n", mode);
  return 0;
}
