// A GoogleTest program with leaseguard's listener (include/leaseguard/gtest.hpp): one test
// leaks a device allocation (leak_in_test), one frees what it allocates. Under leaseguard
// each test has its own lease, and with fail_on_leak the leaking one fails.
#include <gtest/gtest.h>

#include "leaseguard/gtest.hpp"
#include "victim.h"

extern "C" VICTIM_NOINLINE void leak_in_test() {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, 4321));
}

TEST(Listener, Leaks) { leak_in_test(); }

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
