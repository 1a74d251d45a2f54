// The simulated driver's stream memory operations, prefetches, stream capture, graphs and
// peer access (sim/sim_cuda_exports_stream_ops.cpp): what NVIDIA's libraries resolve at
// start, answered as a driver answers what the simulator can decide.
#include <gtest/gtest.h>

#include <cstdint>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"
#include "sim_context_fixture.h"

namespace {

class StreamOps : public leaseguard::testing::PrimaryContextTest {};

CUstreamBatchMemOpParams write_op(CUdeviceptr address, uint64_t value, bool wide) {
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = address;
  if (wide) op.writeValue.value64 = value;
  else op.writeValue.value = static_cast<cuuint32_t>(value);
  return op;
}

CUstreamBatchMemOpParams wait_op(CUdeviceptr address, uint32_t value, unsigned flags) {
  CUstreamBatchMemOpParams op{};
  op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  op.waitValue.address = address;
  op.waitValue.value = value;
  op.waitValue.flags = flags;
  return op;
}

}  // namespace

TEST_F(StreamOps, WritesLandAndWaitsThatHoldComplete) {
  CUdeviceptr words = 0;
  ASSERT_EQ(cuMemAlloc_v2(&words, 16), CUDA_SUCCESS);
  CUstreamBatchMemOpParams ops[] = {write_op(words, 5, false), write_op(words + 8, 0x1122334455667788ULL, true),
                                    wait_op(words, 5, CU_STREAM_WAIT_VALUE_EQ),
                                    wait_op(words, 3, CU_STREAM_WAIT_VALUE_GEQ),
                                    wait_op(words, 4, CU_STREAM_WAIT_VALUE_AND)};
  ASSERT_EQ(cuStreamBatchMemOp(nullptr, 5, ops, 0), CUDA_SUCCESS);
  uint32_t low = 0;
  uint64_t wide = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&low, words, sizeof low), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH_v2(&wide, words + 8, sizeof wide), CUDA_SUCCESS);
  EXPECT_EQ(low, 5u);
  EXPECT_EQ(wide, 0x1122334455667788ULL);
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words, 5, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  // 5 - 0xfffffffe wraps to 7: "greater or equal" compares cyclically.
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words, 0xfffffffe, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  // Not yet true: it would wait for later work, which the simulator has already run.
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words, 6, CU_STREAM_WAIT_VALUE_EQ), CUDA_ERROR_NOT_SUPPORTED);
  // Outside device memory, misaligned, unknown conditions and operations.
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words + 16, 0, CU_STREAM_WAIT_VALUE_EQ), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words + 2, 0, CU_STREAM_WAIT_VALUE_EQ), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamWaitValue32(nullptr, words, 5, 7), CUDA_ERROR_INVALID_VALUE);
  CUstreamBatchMemOpParams unknown{};
  unknown.operation = static_cast<CUstreamBatchMemOpType>(99);
  EXPECT_EQ(cuStreamBatchMemOp(nullptr, 1, &unknown, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(words), CUDA_SUCCESS);
}

TEST_F(StreamOps, PrefetchingChecksItIsManagedMemory) {
  CUdeviceptr managed = 0, device = 0;
  ASSERT_EQ(cuMemAllocManaged(&managed, 4096, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc_v2(&device, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPrefetchAsync(managed, 4096, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPrefetchAsync(managed + 1024, 1024, CU_DEVICE_CPU, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPrefetchAsync(managed, 8192, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemPrefetchAsync(device, 4096, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemPrefetchAsync(managed, 4096, 7, nullptr), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuMemFree_v2(managed), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(device), CUDA_SUCCESS);
}

TEST_F(StreamOps, CaptureIsRefusedSoNoStreamCapturesAndNoGraphExists) {
  EXPECT_EQ(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(cuStreamIsCapturing(nullptr, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  cuuint64_t id = 1;
  CUgraph graph = reinterpret_cast<CUgraph>(1);
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(nullptr, &status, &id, &graph, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(cuStreamEndCapture(nullptr, &graph), CUDA_ERROR_ILLEGAL_STATE);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(cuGraphInstantiate(&exec, graph, nullptr, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);

  // The thread's capture mode is its own setting, exchanged.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(StreamOps, PeerAccessIsBetweenContextsOfDifferentDevices) {
  CUcontext same_device = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&same_device, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(same_device, 0), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuCtxEnablePeerAccess(same_device, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuCtxDisablePeerAccess(same_device), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  EXPECT_EQ(cuCtxDestroy_v2(same_device), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(same_device, 0), CUDA_ERROR_INVALID_CONTEXT);  // destroyed
}
