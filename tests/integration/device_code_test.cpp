// CUDA programs' own kernels run on the simulator's PTX interpreter (sim/ptx/), with and
// without leaseguard (tests/victims/device_code.cu, built by nvcc as users build).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

#define SKIP_WITHOUT_NVCC()                                                                                \
  if (!LEASEGUARD_HAVE_NVCC)                                                                               \
  GTEST_SKIP() << "SKIPPED: the CUDA Toolkit's nvcc was not found when this build was configured, so the " \
                  "device code victims were not built; install the toolkit (nvcc on the PATH) and reconfigure"

// The program run on the simulated driver alone, as a CUDA program runs on a GPU.
RunResult run_on_simulator(const std::vector<std::string> &argv) {
  return run_process(argv, {{"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR}});
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void every_family_checks(const std::string &program) {
  const RunResult alone = run_on_simulator({program});
  EXPECT_EQ(alone.exit_code, 0) << alone.out << alone.err;
  const std::vector<std::string> lines = lines_of(alone.out);
  std::map<std::string, bool> checks;
  for (const std::string &line : lines) {
    const size_t space = line.find(' ');
    if (line.rfind("block ", 0) == 0 || space == std::string::npos) continue;
    checks[line.substr(0, space)] = line.substr(space + 1) == "ok";
    EXPECT_EQ(line.substr(space + 1), "ok") << line;
  }
  EXPECT_EQ(checks.size(), 11u) << alone.out;
  // Device printf: every thread's line, in block and thread order, with every conversion.
  EXPECT_NE(
      alone.out.find("block 0 thread 0: value 40, ratio 0.125, hex ff, long -1234567890123, text device, char A\n"
                     "block 0 thread 1: value 41, ratio 0.125, hex 100, long -1234567890123, text device, char B\n"
                     "block 1 thread 0: value 40,"),
      std::string::npos)
      << alone.out;

  TempDir out;
  const RunResult tracked =
      run_process({LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", out.path(), "--", program});
  EXPECT_EQ(tracked.exit_code, 0) << tracked.err;
  EXPECT_EQ(tracked.out, alone.out);
}

}  // namespace

// Each family of instructions (state spaces, integer and float arithmetic in each rounding
// mode, conversions, approximations, divergence and device functions, barriers in loops and
// the counting barriers, atomics under contention, shuffles, votes, matches and warp
// reductions (redux.sync in the sm_80 build), printf,
// launch errors, streams and events) computes what the host computes, and prints the same
// with leaseguard in front of the driver as without.
TEST(DeviceCode, EveryInstructionFamilyComputesWhatTheHostComputes) {
  SKIP_WITHOUT_NVCC();
  for (const char *variant : {"device_code_default", "device_code_sm80"}) {
    SCOPED_TRACE(variant);
    every_family_checks(victim(variant));
  }
}

// A kernel that writes out of bounds ends as on a device: the launch is accepted, the next
// synchronization says cudaErrorIllegalAddress, and so does every copy in the context after
// it; the host program goes on, with leaseguard in front of the driver as without. The
// simulator says where on stderr.
TEST(DeviceCode, AFaultingKernelFailsAsADeviceReportsItAndTheProgramGoesOn) {
  SKIP_WITHOUT_NVCC();
  const RunResult run = run_on_simulator({victim("device_code_default"), "fault"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.out, "launch cudaSuccess, synchronize cudaErrorIllegalAddress, copy cudaErrorIllegalAddress\n");
  EXPECT_NE(run.err.find("leaseguard-sim: kernel write_far(int*): illegal address 0x"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("st.global.u32"), std::string::npos) << run.err;

  TempDir out;
  const RunResult tracked = run_process(
      {LEASEGUARD_BIN, "run", "--sim", "--quiet", "--out", out.path(), "--", victim("device_code_default"), "fault"});
  EXPECT_EQ(tracked.exit_code, 0) << tracked.err;
  EXPECT_EQ(tracked.out, run.out);
}

// Device memory a kernel wrote is scanned for pointers as memory written by copies is: four
// buffers held only by a table the kernel filled are reachable; the fifth, dropped, is lost.
TEST(DeviceCode, PointersAKernelWroteKeepTheirBuffersReachable) {
  SKIP_WITHOUT_NVCC();
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("device_code_default"), "table"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  std::map<std::string, int> classes;
  std::map<std::string, double> bytes;
  for (const JsonValue *leak : all_leaks(run.json)) {
    const std::string reachability = (*leak)["reachability"].as_string();
    ++classes[reachability];
    bytes[reachability] += (*leak)["bytes"].as_number();
  }
  EXPECT_EQ(classes, (std::map<std::string, int>{{"direct", 1}, {"reachable", 5}})) << run.result.err;
  EXPECT_EQ(bytes["direct"], 1000) << run.result.err;
  // The four buffers and the table itself (held by the program's global).
  EXPECT_EQ(bytes["reachable"], 4 * 4096 + 4 * 8) << run.result.err;
  EXPECT_EQ(run.json["summary"]["leaked_bytes"].as_number(), 1000);
}

// What the interpreter does not run is refused, naming the kernel and the instruction; code
// with machine code only is refused naming its architectures.
TEST(DeviceCode, WhatTheInterpreterDoesNotRunIsRefusedSayingWhat) {
  SKIP_WITHOUT_NVCC();
  const RunResult tensor = run_on_simulator({victim("device_code_default"), "tensor"});
  EXPECT_EQ(tensor.exit_code, 0) << tensor.out << tensor.err;
  EXPECT_EQ(tensor.out, "tensor launch cudaErrorNotSupported\n");
  EXPECT_NE(tensor.err.find("leaseguard-sim: kernel tensor_cores(__half const*, __half const*, float*) cannot run on "
                            "the simulator: it uses tensor-core wmma (wmma.load"),
            std::string::npos)
      << tensor.err;

  const RunResult sass = run_on_simulator({victim("device_code_sass_only"), "spaces"});
  EXPECT_NE(sass.exit_code, 0) << sass.out;
  EXPECT_NE(sass.err.find("cannot run on the simulator: its code is machine code only (sm_75)"), std::string::npos)
      << sass.err;
}
