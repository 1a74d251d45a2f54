/* Reaches the driver the way plugins and language bindings do: dlopen("libcuda.so.1") and
 * dlsym on that handle, never linking libcuda. Leaks one 5000-byte allocation through the
 * looked-up cuMemAlloc_v2 and frees another through the looked-up cuMemFree_v2. */
#include <dlfcn.h>

#include "victim.h"

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*device_get_fn)(CUdevice *, int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_current_fn)(CUcontext);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void *lookup(void *handle, const char *name) {
  void *function = dlsym(handle, name);
  if (function == NULL) {
    fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
    exit(3);
  }
  return function;
}

static VICTIM_NOINLINE void leak_through_dlsym(alloc_fn alloc, free_fn release) {
  CUdeviceptr kept, freed;
  CHECK(alloc(&freed, 4096));
  CHECK(release(freed));
  CHECK(alloc(&kept, 5000));
}

int main(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 3;
  }
  init_fn init = (init_fn)lookup(driver, "cuInit");
  device_get_fn device_get = (device_get_fn)lookup(driver, "cuDeviceGet");
  retain_fn retain = (retain_fn)lookup(driver, "cuDevicePrimaryCtxRetain");
  set_current_fn set_current = (set_current_fn)lookup(driver, "cuCtxSetCurrent");
  CUdevice device;
  CUcontext context;
  CHECK(init(0));
  CHECK(device_get(&device, 0));
  CHECK(retain(&context, device));
  CHECK(set_current(context));
  leak_through_dlsym((alloc_fn)lookup(driver, "cuMemAlloc_v2"), (free_fn)lookup(driver, "cuMemFree_v2"));
  /* A name leaseguard does not hook comes back as the driver's own function. */
  if (lookup(driver, "cuInit") != (void *)init) return 4;
  printf("dlopen_calls done\n");
  return 0;
}
