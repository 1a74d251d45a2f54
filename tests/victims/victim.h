/* Shared helpers for victim programs: the driver declarations (the project's own, or the
 * toolkit's cuda.h when built with VICTIM_USE_TOOLKIT), a CHECK that exits with a message,
 * and context set-up. Victims see every exported variant under its own name. */
#ifndef LEASEGUARD_TESTS_VICTIM_H
#define LEASEGUARD_TESTS_VICTIM_H

#include <stdio.h>
#include <stdlib.h>

#ifdef VICTIM_USE_TOOLKIT
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#else
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"
#endif

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    CUresult check_status_ = (call);                                                                \
    if (check_status_ != CUDA_SUCCESS) {                                                            \
      fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, (int)check_status_); \
      exit(3);                                                                                      \
    }                                                                                               \
  } while (0)

/* Keeps the compiler from merging or inlining leak sites, so each has its own stack. */
#define VICTIM_NOINLINE __attribute__((noinline, noclone))

static inline CUcontext victim_primary_context(void) {
  CUdevice device;
  CUcontext context;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  return context;
}

#endif
