// The leak the C++ API makes impossible: an early return between an allocation and its free.
//
// upload_raw() is the C way: the error path returns before cuMemFree and leaks the buffer.
// upload_with_handles() is the same code with a GpuMemHandle: the early return frees it.
//
//   leaseguard run --sim -- build/examples/api_early_return
// reports exactly one leak, from upload_raw.
#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include <lg_cuda.h>
#include <leaseguard/session.hpp>

#include <cstdio>
#include <vector>

namespace {

bool valid(const std::vector<float> &frame) { return !frame.empty() && frame[0] >= 0.0f; }

// Returns false on a bad frame, and leaks the device buffer doing so.
__attribute__((noinline)) bool upload_raw(const std::vector<float> &frame) {
  CUdeviceptr buffer = 0;
  if (cuMemAlloc_v2(&buffer, frame.size() * sizeof(float)) != CUDA_SUCCESS) return false;
  if (!valid(frame)) return false;  // the bug: cuMemFree_v2 is skipped
  cuMemcpyHtoD_v2(buffer, frame.data(), frame.size() * sizeof(float));
  cuMemFree_v2(buffer);
  return true;
}

// The same, with a handle: every return path frees.
__attribute__((noinline)) bool upload_with_handles(leaseguard::GpuSession &session, const std::vector<float> &frame) {
  leaseguard::GpuMemHandle buffer = session.mem_alloc(frame.size() * sizeof(float));
  if (!valid(frame)) return false;  // `buffer` is freed here
  session.mem_write(buffer, 0, std::as_bytes(std::span(frame)));
  return true;
}

}  // namespace

int main() {
  std::vector<float> bad(1024, -1.0f);
  leaseguard::GpuSession session({.name = "uploads"});  // also makes the device's context current
  CUcontext context = nullptr;
  CUdevice device = 0;
  cuInit(0);
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&context, device);
  cuCtxSetCurrent(context);
  bool raw_ok = upload_raw(bad);
  bool handle_ok = upload_with_handles(session, bad);
  std::printf("raw: %s, handles: %s\n", raw_ok ? "ok" : "rejected", handle_ok ? "ok" : "rejected");
  std::printf("session leaked: %zu\n", session.end());  // 0
  return 0;
}
