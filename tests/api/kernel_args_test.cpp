// KernelArgs packing by the driver's rules, and launches of the simulator's host kernels
// through kernelParams and through the packed `extra` buffer, on CUDA and HIP.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "api_test_support.h"
#include "leaseguard/session.hpp"

namespace leaseguard::testing {
namespace {

struct alignas(16) Float4 {
  float x, y, z, w;
};

template <typename T>
concept Pushable = requires(KernelArgs args, T value) {
  args.push(value);
};

TEST(KernelArgs, ValuesAreCheckedAtCompileTime) {
  static_assert(Pushable<int> && Pushable<double> && Pushable<Float4> && Pushable<char>);
  static_assert(!Pushable<std::string>, "not trivially copyable");
  static_assert(!Pushable<float *>, "a host pointer is never a kernel argument");
}

TEST(KernelArgs, EachArgumentAtItsNaturalAlignment) {
  GpuSession session({.name = "packing"});
  GpuMemHandle out = session.mem_alloc(64);
  KernelArgs args;
  args.push('a').push(2.5).push(Float4{1, 2, 3, 4}).push('b').push_buffer(out);
  ASSERT_EQ(args.count(), 5u);
  EXPECT_EQ(args.offset(0), 0u);
  EXPECT_EQ(args.offset(1), 8u);   // double: 8-aligned
  EXPECT_EQ(args.offset(2), 16u);  // float4: 16-aligned
  EXPECT_EQ(args.offset(3), 32u);
  EXPECT_EQ(args.offset(4), 40u);  // device pointer: 8 bytes, 8-aligned
  EXPECT_EQ(args.size(), 48u);
  void **params = args.params();
  EXPECT_EQ(params[1], static_cast<const void *>(args.buffer().data() + 8));
  EXPECT_EQ(params[5], nullptr);
  void **extra = args.extra();
  EXPECT_EQ(extra[0], reinterpret_cast<void *>(1));  // CU_LAUNCH_PARAM_BUFFER_POINTER
  EXPECT_EQ(*static_cast<size_t *>(extra[3]), 48u);
  EXPECT_EQ(extra[4], nullptr);                                             // CU_LAUNCH_PARAM_END
  EXPECT_EQ(args.extra_for(Backend::Hip)[4], reinterpret_cast<void *>(3));  // HIP_LAUNCH_PARAM_END
}

TEST(KernelArgs, TheLargestParameterSpaceIsEnforced) {
  KernelArgs args;
  struct Block {
    char bytes[4096];
  };
  for (int i = 0; i < 7; ++i) args.push(Block{});
  try {
    args.push(Block{});
    ADD_FAILURE() << "no limit";
  } catch (const Error &error) {
    EXPECT_EQ(error.kind(), ErrorKind::ArgumentsTooBig);
  }
}

class Launch : public ::testing::TestWithParam<std::tuple<Backend, bool>> {};

TEST_P(Launch, VectorAddAndFill) {
  auto [backend, as_extra] = GetParam();
  GpuSession session({.name = "launch", .backend = backend});
  GpuFunction add = session.load_function(sim_module(), "vector_add");
  GpuFunction fill = session.load_function(sim_module(), "fill_u32");
  constexpr unsigned n = 1000;
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i);
  }
  GpuMemHandle da = session.mem_alloc(n * sizeof(float));
  GpuMemHandle db = session.mem_alloc(n * sizeof(float));
  GpuMemHandle dc = session.mem_alloc(n * sizeof(float));
  session.mem_write(da, 0, std::as_bytes(std::span(a)));
  session.mem_write(db, 0, std::as_bytes(std::span(b)));
  KernelArgs args;
  args.push_buffer(da).push_buffer(db).push_buffer(dc).push(n);
  session.launch(add, {(n + 255) / 256}, {256}, args, as_extra);
  std::vector<float> c(n);
  session.mem_read(dc, 0, std::as_writable_bytes(std::span(c)));
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(c[i], 1.5f * static_cast<float>(i)) << i;

  KernelArgs fill_args;
  fill_args.push_buffer(dc).push(0xabcdef01u).push(n / 2);
  session.launch(fill, {4}, {256}, fill_args, as_extra);
  std::vector<uint32_t> filled(n);
  session.mem_read(dc, 0, std::as_writable_bytes(std::span(filled)));
  EXPECT_EQ(filled[n / 2 - 1], 0xabcdef01u);
  EXPECT_NE(filled[n / 2], 0xabcdef01u);
}

// A misaligned mix of char, double, a 16-byte-aligned struct, char and a pointer: the
// kernel reads each back from where the packing rule put it.
TEST_P(Launch, MisalignedMixesArriveIntact) {
  auto [backend, as_extra] = GetParam();
  GpuSession session({.name = "mixed", .backend = backend});
  GpuFunction mixed = session.load_function(sim_module(), "mixed_args");
  GpuMemHandle out = session.mem_alloc(7 * sizeof(uint64_t));
  KernelArgs args;
  args.push('Q').push(-1.25).push(Float4{0.5f, -2.0f, 3.25f, 1e30f}).push('z').push_buffer(out);
  session.launch(mixed, {1}, {1}, args, as_extra);
  uint64_t decoded[7] = {};
  session.mem_read(out, 0, std::as_writable_bytes(std::span(decoded)));
  EXPECT_EQ(decoded[0], static_cast<uint64_t>('Q'));
  double d;
  std::memcpy(&d, &decoded[1], sizeof d);
  EXPECT_EQ(d, -1.25);
  const float expected[4] = {0.5f, -2.0f, 3.25f, 1e30f};
  for (int i = 0; i < 4; ++i) {
    float f;
    uint32_t bits = static_cast<uint32_t>(decoded[2 + i]);
    std::memcpy(&f, &bits, sizeof f);
    EXPECT_EQ(f, expected[i]) << i;
  }
  EXPECT_EQ(decoded[6], static_cast<uint64_t>('z'));
}

INSTANTIATE_TEST_SUITE_P(BothBackendsBothWays, Launch,
                         ::testing::Combine(::testing::Values(Backend::Cuda, Backend::Hip), ::testing::Bool()),
                         [](const auto &test) {
                           return std::string(std::get<0>(test.param) == Backend::Cuda ? "Cuda" : "Hip") +
                                  (std::get<1>(test.param) ? "Extra" : "Params");
                         });

TEST(Launch, ArgumentsThatDoNotMatchTheKernelAreRefusedByTheDriver) {
  GpuSession session({.name = "mismatch"});
  GpuFunction fill = session.load_function(sim_module(), "fill_u32");
  GpuMemHandle out = session.mem_alloc(64);
  KernelArgs args;
  args.push_buffer(out).push(1u);  // one argument short
  try {
    session.launch(fill, {1}, {1}, args, true);
    ADD_FAILURE() << "no error";
  } catch (const Error &error) {
    EXPECT_EQ(error.kind(), ErrorKind::Driver);
    EXPECT_EQ(error.name(), "CUDA_ERROR_INVALID_VALUE");
  }
}

TEST(Launch, HipTargetsTakeFourKilobytesOfArguments) {
  GpuSession session({.name = "hip-limit", .backend = Backend::Hip});
  GpuFunction fill = session.load_function(sim_module(), "fill_u32");
  KernelArgs args;
  struct Block {
    char bytes[4097];
  };
  args.push(Block{});
  try {
    session.launch(fill, {1}, {1}, args);
    ADD_FAILURE() << "no limit";
  } catch (const Error &error) {
    EXPECT_EQ(error.kind(), ErrorKind::ArgumentsTooBig);
  }
}

TEST(Launch, UnknownKernelsAndImagesAreDriverErrors) {
  GpuSession session({.name = "unknown"});
  try {
    session.load_function(sim_module(), "no_such_kernel");
    ADD_FAILURE() << "no error";
  } catch (const Error &error) {
    EXPECT_EQ(error.name(), "CUDA_ERROR_NOT_FOUND");
  }
  const char junk[] = "not a module";
  try {
    session.load_function(std::as_bytes(std::span(junk)), "vector_add");
    ADD_FAILURE() << "no error";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 200);  // CUDA_ERROR_INVALID_IMAGE
  }
}

TEST(Launch, PushedBuffersStayAllocatedWhileTheArgumentsLive) {
  GpuSession session({.name = "keep-alive"});
  const uint64_t frees = sim_calls("cuMemFree_v2");
  KernelArgs args;
  args.push_buffer(session.mem_alloc(64));  // the only handle is the one args holds
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees);
  args = KernelArgs();
  EXPECT_EQ(sim_calls("cuMemFree_v2"), frees + 1);
}

}  // namespace
}  // namespace leaseguard::testing
