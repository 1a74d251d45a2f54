// A GoogleTest program with leaseguard's listener (include/leaseguard/gtest.hpp): one test
// leaks a device allocation (leak_in_test), one frees what it allocates, one fills a
// workspace a global keeps for later tests (fill_workspace: reachable, not a leak). Under
// leaseguard each test has its own lease, and with fail_on_leak only the leaking one fails.
#include <gtest/gtest.h>

#include "leaseguard/gtest.hpp"
#include "victim.h"

extern "C" VICTIM_NOINLINE void leak_in_test() {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, 4321));
}

TEST(Listener, Leaks) { leak_in_test(); }

// A lazily made workspace, as a cuBLAS handle or a cache is: kept by a global for the tests after.
__attribute__((used)) CUdeviceptr g_workspace;
extern "C" VICTIM_NOINLINE void fill_workspace() {
  if (g_workspace == 0) CHECK(cuMemAlloc_v2(&g_workspace, 8765));
}

TEST(Listener, FillsAWorkspace) { fill_workspace(); }

TEST(Listener, Clean) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 1234));
  CHECK(cuMemFree_v2(buffer));
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  victim_primary_context();
  leaseguard::install_lease_per_test({.fail_on_leak = true});
  return RUN_ALL_TESTS();
}
