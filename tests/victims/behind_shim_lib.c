/* A HAMi-style shim (as HAMi-core's libvgpu.so): it defines only the allocation family and
 * forwards each call to the driver, found with dlsym(RTLD_NEXT, ...) or, built with
 * SHIM_DLOPEN, with dlsym on its own dlopen("libcuda.so.1") handle. It defines none of the
 * queries leaseguard asks (cuCtxGetCurrent, cuCtxGetDevice, cuMemPoolGetAttribute...), so
 * leaseguard must ask them of the driver, not of the library its hooks forward to. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdlib.h>

#include "victim.h"

static void *next_function(const char *name) {
#ifdef SHIM_DLOPEN
  static void *driver;
  if (driver == NULL) driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void *function = driver != NULL ? dlsym(driver, name) : NULL;
#else
  void *function = dlsym(RTLD_NEXT, name);
#endif
  if (function == NULL) abort();
  return function;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  static CUresult (*next)(CUdeviceptr *, size_t);
  if (next == NULL) next = (CUresult(*)(CUdeviceptr *, size_t))next_function("cuMemAlloc_v2");
  return next(dptr, bytesize);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  static CUresult (*next)(CUdeviceptr);
  if (next == NULL) next = (CUresult(*)(CUdeviceptr))next_function("cuMemFree_v2");
  return next(dptr);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream) {
  static CUresult (*next)(CUdeviceptr *, size_t, CUstream);
  if (next == NULL) next = (CUresult(*)(CUdeviceptr *, size_t, CUstream))next_function("cuMemAllocAsync");
  return next(dptr, bytesize, stream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  static CUresult (*next)(CUdeviceptr, CUstream);
  if (next == NULL) next = (CUresult(*)(CUdeviceptr, CUstream))next_function("cuMemFreeAsync");
  return next(dptr, stream);
}
