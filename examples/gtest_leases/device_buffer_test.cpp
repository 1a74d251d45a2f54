// Per-test leases for GoogleTest: run under leaseguard, each test gets its own lease, and
// the test that leaks device memory fails, naming itself.
//
//   leaseguard run --sim -- ./device_buffer_test
//
// Without leaseguard the same binary runs and every test passes.
#include <gtest/gtest.h>

#include "leaseguard/gtest.hpp"
#include "lg_cuda.h"

namespace {

class DeviceBufferTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CUdevice device;
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, device), CUDA_SUCCESS);
  }
  void SetUp() override { ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS); }
  static CUcontext context_;
};
CUcontext DeviceBufferTest::context_ = nullptr;

TEST_F(DeviceBufferTest, FreesWhatItAllocates) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 1024), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8(buffer, 0, 1024), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(buffer), CUDA_SUCCESS);
}

TEST_F(DeviceBufferTest, ForgetsToFree) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc(&buffer, 2048), CUDA_SUCCESS);  // never freed: this test leaks
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  leaseguard::install_lease_per_test({.fail_on_leak = true});
  return RUN_ALL_TESTS();
}
