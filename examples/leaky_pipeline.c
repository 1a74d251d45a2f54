/* A small image pipeline on the CUDA driver API that leaks device memory the way real code
 * does: an early return on an error path skips the free, and a scratch buffer is simply
 * forgotten. It also keeps a workspace for its whole life, on purpose, in a global: memory
 * it still reaches at exit, which leaseguard counts but does not call a leak. Run it under
 * leaseguard:
 *
 *     leaseguard run --sim -- ./leaky_pipeline
 */
#include <stdio.h>
#include <string.h>

#include "lg_cuda.h"

#define CHECK(call)                                     \
  do {                                                  \
    CUresult status_ = (call);                          \
    if (status_ != CUDA_SUCCESS) {                      \
      const char *name_ = "?";                          \
      cuGetErrorName(status_, &name_);                  \
      fprintf(stderr, "%s failed: %s\n", #call, name_); \
      return -1;                                        \
    }                                                   \
  } while (0)

enum { kWidth = 64, kHeight = 32 };

/* Allocated once and kept until the process ends, as libraries keep their workspaces. */
CUdeviceptr g_workspace;

/* Uploads one frame; rejects frames with a bad header -- and forgets the buffer then. */
static int upload_frame(const unsigned char *pixels, size_t bytes, int valid, CUdeviceptr *out) {
  CUdeviceptr frame = 0;
  CHECK(cuMemAlloc(&frame, bytes));
  if (!valid) {
    fprintf(stderr, "frame rejected: bad header\n");
    return -1; /* leak: frame is never freed on this path */
  }
  CHECK(cuMemcpyHtoD(frame, pixels, bytes));
  *out = frame;
  return 0;
}

static int blur(CUdeviceptr frame, size_t bytes) {
  CUdeviceptr scratch = 0;
  CHECK(cuMemAlloc(&scratch, bytes * 2)); /* leak: the scratch buffer is never released */
  CHECK(cuMemcpyDtoD(scratch, frame, bytes));
  return 0;
}

int main(void) {
  CUdevice device;
  CUcontext context;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuMemAlloc(&g_workspace, 1 << 20));

  unsigned char pixels[kWidth * kHeight];
  memset(pixels, 7, sizeof pixels);
  for (int i = 0; i < 4; ++i) {
    CUdeviceptr frame = 0;
    if (upload_frame(pixels, sizeof pixels, i != 2, &frame) != 0) continue;
    blur(frame, sizeof pixels);
    CHECK(cuMemFree(frame));
  }
  printf("processed 4 frames\n");
  /* The primary context stays retained until exit, as in most applications, so the leaks
   * above are still live when the process ends. */
  return 0;
}
