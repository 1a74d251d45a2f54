// Throws and catches C++ exceptions through code that allocates through the hooks, built
// without frame pointers: leaseguard's stack capture (which reads the same call frame
// information the exception unwinder does) must leave every exception exactly as it was.
// Each round: a buffer owned by an RAII object is freed while its exception unwinds, a
// guard's destructor allocates (and leaks) 777 bytes during the unwinding, the exception is
// caught, rethrown as a nested exception_ptr and caught again. Prints what it caught.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "victim.h"

namespace {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { CHECK(cuMemAlloc_v2(&pointer_, bytes)); }
  ~DeviceBuffer() { cuMemFree_v2(pointer_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

 private:
  CUdeviceptr pointer_ = 0;
};

int g_leaked_in_unwinding = 0;
volatile bool g_throw = true;  // unknown to the compiler, which would otherwise see every path throw

struct AllocatesWhileUnwinding {
  ~AllocatesWhileUnwinding() {
    if (std::uncaught_exceptions() == 0) return;
    CUdeviceptr leaked;
    if (cuMemAlloc_v2(&leaked, 777) == CUDA_SUCCESS) ++g_leaked_in_unwinding;
  }
};

__attribute__((noinline)) void bottom(int round) {
  DeviceBuffer owned(4096);
  AllocatesWhileUnwinding guard;
  if (g_throw) throw std::runtime_error("round " + std::to_string(round));
}

__attribute__((noinline)) void middle(int round, int depth) {
  DeviceBuffer owned(256 + static_cast<size_t>(depth));
  if (depth == 0) bottom(round);
  else middle(round, depth - 1);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) std::exception_ptr catch_and_keep(int round) {
  try {
    middle(round, 8);
  } catch (const std::runtime_error &error) {
    return std::make_exception_ptr(std::logic_error(std::string("kept ") + error.what()));
  }
  return nullptr;
}

}  // namespace

int main() {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, 0, device));
  int caught = 0;
  std::string last;
  for (int round = 0; round < 100; ++round) {
    std::exception_ptr kept = catch_and_keep(round);
    try {
      std::rethrow_exception(kept);
    } catch (const std::logic_error &error) {
      ++caught;
      last = error.what();
    } catch (...) {
      std::puts("caught the wrong type");
    }
  }
  std::printf("caught %d, last \"%s\", allocated while unwinding %d\n", caught, last.c_str(), g_leaked_in_unwinding);
  return caught == 100 ? 0 : 1;
}
