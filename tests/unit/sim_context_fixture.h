// A test of the simulated driver with device 0's primary context current: retained for the
// test, released after it (sim_tests).
#pragma once

#include <gtest/gtest.h>

#include "lg_cuda.h"

namespace leaseguard::testing {

class PrimaryContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS); }
  CUcontext primary_ = nullptr;
};

}  // namespace leaseguard::testing
