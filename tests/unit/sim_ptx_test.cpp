// The PTX interpreter on its own (sim/ptx/): handwritten PTX decoded and run against host
// buffers, without nvcc, and text that is not PTX nvcc writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lg_cuda.h"
#include "ptx/ptx_machine.h"
#include "ptx/ptx_program.h"
#include "sim_context_fixture.h"

using namespace leaseguard::sim::ptx;

namespace {

// Device memory for the tests: one host buffer.
std::vector<uint32_t> g_memory;

bool in_memory(uint64_t address, uint64_t *base, uint64_t *size) {
  const auto begin = reinterpret_cast<uint64_t>(g_memory.data());
  if (address < begin || address >= begin + g_memory.size() * sizeof(uint32_t)) return false;
  *base = begin;
  *size = g_memory.size() * sizeof(uint32_t);
  return true;
}

LaunchOutcome launch(const Program &program, const std::string &kernel, unsigned blocks, unsigned threads,
                     const std::vector<uint64_t> &arguments) {
  const Kernel &code = program.kernels.at(kernel);
  std::vector<unsigned char> buffer(code.arguments_size);
  for (size_t i = 0; i < code.parameters.size(); ++i)
    std::memcpy(buffer.data() + code.parameters[i].offset, &arguments[i], code.parameters[i].size);
  LaunchShape shape;
  shape.grid[0] = blocks;
  shape.block[0] = threads;
  LaunchSymbols symbols;
  symbols.globals.assign(program.globals.size(), 0);
  DeviceMemory memory;
  memory.range_of = &in_memory;
  return run_kernel(program, code, shape, buffer, symbols, memory);
}

uint64_t address_of(size_t index) { return reinterpret_cast<uint64_t>(g_memory.data() + index); }

// out[i] = the sum of lanes 0..i of its warp (a shuffle scan), then the block's total in
// shared memory after a barrier, through a device function.
const char *const kScan = R"(
.version 8.0
.target sm_75
.address_size 64

.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %v;
  ld.param.b32 %v, [x];
  shl.b32 %v, %v, 1;
  st.param.b32 [r], %v;
  ret;
}

.visible .entry scan(.param .u64 out)
{
  .shared .align 4 .b32 total;
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  mov.u32 %r3, 1;
$L_loop:
  shfl.sync.up.b32 %r4|%p1, %r2, %r3, 0, -1;
  @%p1 add.s32 %r2, %r2, %r4;
  shl.b32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, 32;
  @%p2 bra $L_loop;
  setp.ne.u32 %p1, %r1, 31;
  @%p1 bra $L_wait;
  st.shared.u32 [total], %r2;
$L_wait:
  bar.sync 0;
  ld.shared.u32 %r5, [total];
  {
    .param .b32 a;
    .param .b32 b;
    st.param.b32 [a], %r5;
    call.uni (b), twice, (a);
    ld.param.b32 %r6, [b];
  }
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r2, %r6};
  ret;
}
)";

}  // namespace

TEST(Ptx, AScanThroughShufflesABarrierAndACallComputesWhatItShould) {
  const DecodeResult decoded = decode(kScan);
  ASSERT_NE(decoded.program, nullptr) << decoded.error;
  EXPECT_TRUE(decoded.program->kernels.at("scan").refusal.empty()) << decoded.program->kernels.at("scan").refusal;
  g_memory.assign(64, 0);
  const LaunchOutcome outcome = launch(*decoded.program, "scan", 1, 32, {address_of(0)});
  ASSERT_EQ(outcome.status, LaunchStatus::Done) << outcome.message;
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(g_memory[2 * t], (t + 1) * (t + 2) / 2) << t;
    EXPECT_EQ(g_memory[2 * t + 1], 2u * 528u) << t;
  }
  EXPECT_EQ(outcome.thread_instructions > 32u * 20u, true);
}

TEST(Ptx, AnAccessOutsideMemoryOrMisalignedEndsTheLaunchSayingWhere) {
  const char *const text = R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry poke(.param .u64 at)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [at];
  st.global.u32 [%rd1], 7;
  ret;
}
)";
  const DecodeResult decoded = decode(text);
  ASSERT_NE(decoded.program, nullptr) << decoded.error;
  g_memory.assign(4, 0);
  EXPECT_EQ(launch(*decoded.program, "poke", 1, 1, {address_of(0)}).status, LaunchStatus::Done);
  EXPECT_EQ(g_memory[0], 7u);
  const LaunchOutcome outside = launch(*decoded.program, "poke", 1, 1, {address_of(4)});
  EXPECT_EQ(outside.status, LaunchStatus::IllegalAddress);
  EXPECT_NE(outside.message.find("illegal address"), std::string::npos) << outside.message;
  EXPECT_NE(outside.message.find("line 10 of its PTX"), std::string::npos) << outside.message;
  EXPECT_EQ(launch(*decoded.program, "poke", 1, 1, {address_of(0) + 2}).status, LaunchStatus::MisalignedAddress);
  EXPECT_EQ(launch(*decoded.program, "poke", 1, 1, {0}).status, LaunchStatus::IllegalAddress);
}

TEST(Ptx, WhatTheInterpreterDoesNotRunRefusesTheKernelsThatReachItOnly) {
  const char *const text = R"(
.version 8.0
.target sm_80
.address_size 64
.func helper()
{
  cp.async.wait_all;
  ret;
}
.func (.param .b32 r) again(.param .b32 x)
{
  .reg .b32 %v;
  ld.param.b32 %v, [x];
  {
    .param .b32 a;
    .param .b32 b;
    st.param.b32 [a], %v;
    call.uni (b), again, (a);
  }
  st.param.b32 [r], %v;
  ret;
}
.visible .entry uses_helper()
{
  call.uni helper, ();
  ret;
}
.visible .entry recurses()
{
  .reg .b32 %x;
  {
    .param .b32 a;
    .param .b32 b;
    st.param.b32 [a], 1;
    call.uni (b), again, (a);
  }
  ret;
}
.visible .entry fine()
{
  ret;
}
)";
  const DecodeResult decoded = decode(text);
  ASSERT_NE(decoded.program, nullptr) << decoded.error;
  const auto &kernels = decoded.program->kernels;
  EXPECT_NE(kernels.at("uses_helper").refusal.find("cp.async"), std::string::npos) << kernels.at("uses_helper").refusal;
  EXPECT_NE(kernels.at("recurses").refusal.find("recursion"), std::string::npos) << kernels.at("recurses").refusal;
  EXPECT_TRUE(kernels.at("fine").refusal.empty()) << kernels.at("fine").refusal;
}

// Every prefix of a module, the module with any one character gone, and bytes that are not
// PTX at all decode to an error or to kernels that refuse, never to a crash or a hang.
TEST(Ptx, TextCutAnywhereOrNotPtxAtAllDecodesWithoutHarm) {
  const std::string text = kScan;
  for (size_t length = 0; length < text.size(); length += 7) {
    const DecodeResult decoded = decode(text.substr(0, length));
    EXPECT_TRUE(decoded.program != nullptr || !decoded.error.empty()) << length;
  }
  for (size_t at = 0; at < text.size(); at += 3) {  // one character gone, anywhere
    const DecodeResult decoded = decode(text.substr(0, at) + text.substr(at + 1));
    EXPECT_TRUE(decoded.program != nullptr || !decoded.error.empty()) << at;
  }
  std::string noise;
  uint32_t state = 12345;
  for (int i = 0; i < 4096; ++i) {
    state = state * 1103515245u + 12345u;
    noise += "{}[]();,.%@!$_ab01:+-\n\t"[(state >> 16) % 23];
  }
  const DecodeResult decoded = decode(noise);
  EXPECT_TRUE(decoded.program != nullptr || !decoded.error.empty());
  // A register count no kernel declares is refused, not made (the fuzzer's find: four
  // billion names, and the decoder out of memory).
  const DecodeResult huge = decode(
      ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry poke(.param .u64 at)\n{\n"
      "  .reg .b64 %rd<8888888888888888888888888888888888888888882>;\n  ret;\n}\n");
  EXPECT_EQ(huge.program, nullptr);
  EXPECT_NE(huge.error.find("registers declared at once"), std::string::npos) << huge.error;
}

// Through the driver API: PTX text loaded with cuModuleLoadData, launched with kernelParams
// and with a packed `extra` buffer, read back; then a fault, whose error the context keeps.
class PtxThroughTheDriver : public leaseguard::testing::PrimaryContextTest {};

TEST_F(PtxThroughTheDriver, ALoadedModulesKernelRunsAndAFaultStaysWithTheContext) {
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, kScan), CUDA_SUCCESS);
  CUfunction scan = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&scan, module, "scan"), CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(cuMemAlloc_v2(&out, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  void *params[] = {&out};
  ASSERT_EQ(cuLaunchKernel(scan, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  uint32_t host[64] = {};
  ASSERT_EQ(cuMemcpyDtoH_v2(host, out, sizeof host), CUDA_SUCCESS);
  EXPECT_EQ(host[2 * 31], 528u);
  EXPECT_EQ(host[2 * 31 + 1], 1056u);

  ASSERT_EQ(cuMemsetD32_v2(out, 0, 64), CUDA_SUCCESS);
  size_t size = sizeof out;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &out, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(cuLaunchKernel(scan, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH_v2(host, out, sizeof host), CUDA_SUCCESS);
  EXPECT_EQ(host[0], 1u);
  EXPECT_EQ(cuLaunchKernel(scan, 1, 1, 1, 1025, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);

  // Past the allocation's end: the launch is taken, the fault comes at the next call.
  CUdeviceptr past = out + 60 * sizeof(uint32_t);
  void *bad[] = {&past};
  EXPECT_EQ(cuLaunchKernel(scan, 1, 1, 1, 32, 1, 1, 0, nullptr, bad, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuMemcpyDtoH_v2(host, out, sizeof host), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuLaunchKernel(scan, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  // A reset context is usable again.
  ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}
