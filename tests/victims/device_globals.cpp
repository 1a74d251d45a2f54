// Device memory whose only pointers lie in modules' global variables (`__device__` and
// `__managed__` variables, as the driver hands them out): reachable while the module is
// loaded, lost once it is unloaded. Sizes: reachable 1201..1299, direct 3201..3299.
#include <cstring>

#include "device_code_images.h"
#include "victim.h"

namespace {

enum Size : size_t {
  kInLibraryGlobal = 1201,
  kInManagedGlobal = 1202,
  kInModuleGlobal = 1203,  // located with no size asked for
  kInUnloadedModule = 3201,
  kDropped = 3202,
};

const std::vector<unsigned char> kCubin =
    leaseguard::testing::make_cubin({"_Z4workv"}, {{"table", 8, {}}, {"shared", 8, {}, true}, {"padding", 64, {}}});

VICTIM_NOINLINE CUdeviceptr allocate(size_t bytes) {
  CUdeviceptr pointer = 0;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
  return pointer;
}

VICTIM_NOINLINE void store(CUdeviceptr where, CUdeviceptr pointer) {
  CHECK(cuMemcpyHtoD_v2(where, &pointer, sizeof pointer));
}

VICTIM_NOINLINE CUmodule module_holding(size_t bytes) {
  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, kCubin.data()));
  CUdeviceptr table = 0;
  CHECK(cuModuleGetGlobal_v2(&table, nullptr, module, "table"));
  store(table, allocate(bytes));
  return module;
}

VICTIM_NOINLINE void hold_in_globals() {
  CUlibrary library = nullptr;
  CHECK(cuLibraryLoadData(&library, kCubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUdeviceptr table = 0;
  size_t bytes = 0;
  CHECK(cuLibraryGetGlobal(&table, &bytes, library, "table"));
  store(table, allocate(kInLibraryGlobal));
  CUdeviceptr shared = 0;
  CHECK(cuLibraryGetManaged(&shared, &bytes, library, "shared"));
  const CUdeviceptr managed_held = allocate(kInManagedGlobal);
  std::memcpy(reinterpret_cast<void *>(shared), &managed_held, sizeof managed_held);  // host-readable
  module_holding(kInModuleGlobal);
  CHECK(cuModuleUnload(module_holding(kInUnloadedModule)));
  allocate(kDropped);
}

// Overwrites the dead stack below the caller, where stale copies of the pointers lie.
VICTIM_NOINLINE void scrub_stack() {
  volatile char area[16384];
  for (size_t i = 0; i < sizeof area; ++i) area[i] = 0;
}

}  // namespace

int main() {
  victim_primary_context();
  hold_in_globals();
  scrub_stack();
  return 0;
}
