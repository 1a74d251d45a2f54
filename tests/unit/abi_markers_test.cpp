// The launch markers leaseguard declares are the headers' (checked where the headers exist).
#include <gtest/gtest.h>

#include "lg_cuda.h"

#if LEASEGUARD_HAVE_HIP_HEADERS
extern "C" int lg_hip_launch_markers_match(void);
#endif

namespace {

TEST(AbiCheck, LaunchMarkersMatchTheHeaders) {
  EXPECT_EQ(CU_LAUNCH_PARAM_END, reinterpret_cast<void *>(0));
  EXPECT_EQ(CU_LAUNCH_PARAM_BUFFER_POINTER, reinterpret_cast<void *>(1));
  EXPECT_EQ(CU_LAUNCH_PARAM_BUFFER_SIZE, reinterpret_cast<void *>(2));
#if LEASEGUARD_HAVE_HIP_HEADERS
  EXPECT_TRUE(lg_hip_launch_markers_match());
#else
  GTEST_SKIP() << "no HIP headers here";
#endif
}

}  // namespace
