// CUDA runtime programs, built by the toolkit's nvcc with the static runtime (its default)
// and with the shared one, run unmodified on the simulator under `leaseguard run --sim`
// (tests/victims/runtime_leaks.cu). The runtime reaches the simulator through dlopen,
// cuGetProcAddress and the driver's private tables (sim/sim_export_tables.cpp).
//
// The runtime's own allocations: on the simulator it makes none through the hooked entry
// points (the counts below are exactly the program's), so every reported allocation is the
// program's, attributed through the runtime's frames to the program's function and line.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "process_runner.h"
#include "../unit/test_support.h"

using leaseguard::report::JsonValue;
using namespace leaseguard::testing;

namespace {

const char *const kRuntimes[] = {"static", "shared"};

std::string runtime_victim(const char *runtime) { return victim(std::string("runtime_leaks_") + runtime); }

// The function of the first frame in the victim's own source: the runtime's frames come first.
std::string program_function(const JsonValue &leak, int *line = nullptr) {
  for (const JsonValue &frame : leak["stack"].items()) {
    const JsonValue &file = frame["file"];
    if (file.is_null() || file.as_string().find("runtime_leaks.cu") == std::string::npos) continue;
    if (line != nullptr) *line = static_cast<int>(frame["line"].as_number());
    return frame["function"].is_null() ? "" : frame["function"].as_string();
  }
  return "";
}

#define SKIP_WITHOUT_NVCC()                                                                                \
  if (!LEASEGUARD_HAVE_NVCC)                                                                               \
  GTEST_SKIP() << "SKIPPED: the CUDA Toolkit's nvcc was not found when this build was configured, so the " \
                  "CUDA runtime victims were not built; install the toolkit (nvcc on the PATH) and reconfigure"

}  // namespace

// Each runtime alone, and with cuBLAS, cuBLASLt and cuFFT linked, never called: their
// constructors once grew leaseguard's heap table before anything had called munmap, and every
// lost allocation then read `unchecked` ("the program's host heap was not all tracked").
TEST(Runtime, LeaksAreFoundExactlyAndNamedByTheProgramsFunctions) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : {"static", "shared", "static_libraries", "shared_libraries"}) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "leaks"});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("device: leaseguard simulated GPU, compute capability 9.0"), std::string::npos)
        << run.result.out;
    EXPECT_NE(run.result.out.find("data: ok"), std::string::npos) << run.result.out;
    const JsonValue &process = run.json["processes"][0];
    // Exactly the program's: the round trip's buffer (freed), the workspace and three leaks.
    EXPECT_EQ(process["allocations"].as_number(), 5) << run.result.err;
    EXPECT_EQ(process["frees"].as_number(), 1) << run.result.err;
    std::map<std::string, std::string> lost;  // function -> kind
    std::set<std::string> reachable;
    for (const JsonValue *leak : all_leaks(run.json)) {
      int line = 0;
      const std::string function = program_function(*leak, &line);
      EXPECT_GT(line, 0) << function;
      if ((*leak)["reachability"].as_string() == "reachable") {
        reachable.insert(function);
      } else {
        EXPECT_EQ((*leak)["reachability"].as_string(), "direct") << function;
        lost[function] = (*leak)["kind"].as_string();
      }
    }
    const std::map<std::string, std::string> expected = {{"leak_device_buffer()", "device"},
                                                         {"leak_stream_ordered_buffer(CUstream_st*)", "async"},
                                                         {"leak_pinned_buffer()", "host"}};
    EXPECT_EQ(lost, expected) << run.result.err;
    EXPECT_EQ(reachable, std::set<std::string>{"leaks()"}) << run.result.err;
    EXPECT_EQ(run.json["summary"]["leaked_bytes"].as_number(), (1 << 20) + (3 << 20) + (2 << 20));
    EXPECT_EQ(run.json["summary"]["reachable_bytes"].as_number(), 4 << 20);
  }
}

// The runtime asks the driver where each variable it copies to or from lives, and where each
// __managed__ variable is: those are the program's roots, as its host globals are.
TEST(Runtime, DeviceMemoryHeldByDeviceAndManagedVariablesIsReachable) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "globals"});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("globals: ok"), std::string::npos) << run.result.out;
    std::map<int, std::string> classes;
    for (const JsonValue *leak : all_leaks(run.json))
      classes[static_cast<int>((*leak)["bytes"].as_number())] = (*leak)["reachability"].as_string();
    EXPECT_EQ(classes, (std::map<int, std::string>{{1301, "reachable"}, {1302, "reachable"}, {3301, "direct"}}))
        << run.result.err;
  }
}

TEST(Runtime, DeviceResetFreesWhatTheDriverFreesAsAContextDestroy) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "reset"});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("reset: ok"), std::string::npos) << run.result.out;
    // Left for the reset to free: reported once, by the context's end, not again at exit.
    std::multimap<std::string, std::string> seen;  // function -> how its lease ended
    for (const JsonValue &lease : run.json["processes"][0]["leases"].items())
      for (const JsonValue &leak : lease["leaks"].items())
        seen.emplace(program_function(leak), lease["ended_by"].as_string());
    const std::multimap<std::string, std::string> expected = {{"allocate_before_reset()", "context_destroy"}};
    EXPECT_EQ(seen, expected) << run.result.err;
    EXPECT_EQ(run.json["summary"]["leaked_bytes"].as_number(), 5 << 20) << run.result.err;
    EXPECT_EQ(run.result.err.find("no driver or runtime implementation found"), std::string::npos) << run.result.err;
  }
}

TEST(Runtime, StreamOrderedMemoryPoolsAndEventsLeaveNothing) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "streams"}, {"--fail-on-leak"});
    EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("streams: byte 1, elapsed measured"), std::string::npos) << run.result.out;
    const JsonValue &process = run.json["processes"][0];
    // Two cudaMallocAsync and the pool (a pool is recorded as what holds memory, until destroyed).
    EXPECT_EQ(process["allocations"].as_number(), 3) << run.result.err;
    EXPECT_EQ(process["frees"].as_number(), 3) << run.result.err;
    EXPECT_TRUE(all_leaks(run.json).empty()) << run.result.err;
    EXPECT_TRUE(process["pools_destroyed_in_use"].items().empty());
  }
}

TEST(Runtime, PitchedAnd3DMemoryManagedRegisteredAndArraysRoundTripAndLeaveNothing) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "shapes"}, {"--fail-on-leak"});
    EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("shapes: ok"), std::string::npos) << run.result.out << run.result.err;
    const JsonValue &process = run.json["processes"][0];
    // Pitched, 3D (pitched too), managed, the registration and the array.
    EXPECT_EQ(process["allocations"].as_number(), 5) << run.result.err;
    EXPECT_EQ(process["frees"].as_number(), 5) << run.result.err;
    EXPECT_TRUE(all_leaks(run.json).empty()) << run.result.err;
  }
}

TEST(Runtime, ThreadsAndAForkedChildAreEachAccounted) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    {
      TempDir out;
      auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "threads"});
      ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
      EXPECT_NE(run.result.out.find("threads: ok"), std::string::npos);
      const JsonValue &process = run.json["processes"][0];
      EXPECT_EQ(process["allocations"].as_number(), 4 * 50);
      EXPECT_EQ(process["frees"].as_number(), 4 * 49);
      std::set<double> threads;
      for (const JsonValue *leak : all_leaks(run.json)) {
        EXPECT_EQ(program_function(*leak), "leak_from_a_thread(void*)");
        threads.insert((*leak)["thread"].as_number());
      }
      EXPECT_EQ(threads.size(), 4u) << run.result.err;
    }
    {
      TempDir out;
      auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "fork"}, {}, kForkedChildrenInherit);
      ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
      EXPECT_NE(run.result.out.find("fork: child exited 0"), std::string::npos) << run.result.out;
      ASSERT_EQ(run.json["processes"].size(), 2u) << run.result.err;
      std::vector<std::string> leaked;
      for (const JsonValue *leak : all_leaks(run.json)) leaked.push_back(program_function(*leak));
      EXPECT_EQ(leaked, std::vector<std::string>{"leak_in_the_child()"}) << run.result.err;
    }
  }
}

// The runtime switches devices by making their primary contexts current: leaseguard keeps
// each thread's current context, so each switch must be seen (docs/how-it-works.md, "Which
// context an allocation belongs to"). Each leak is reported on the device the runtime says
// it is on.
TEST(Runtime, EachLeakIsOnTheDeviceTheProgramHadSetWhenItAllocated) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run =
        run_under_leaseguard(out.path(), {runtime_victim(runtime), "devices"}, {}, {{"LEASEGUARD_SIM_DEVICES", "2"}});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    const std::map<std::string, int> expected = {{"leak_first_on_device_0()", 0},
                                                 {"leak_after_switching_to_device_1()", 1},
                                                 {"leak_after_switching_back_to_device_0()", 0},
                                                 {"leak_from_a_thread_on_device_1()", 1},
                                                 {"leak_after_the_thread_still_on_device_0()", 0}};
    std::map<std::string, int> reported;
    for (const JsonValue *leak : all_leaks(run.json))
      reported[program_function(*leak)] = static_cast<int>((*leak)["device"].as_number());
    EXPECT_EQ(reported, expected);
    // The runtime agrees: each leak's pointer is on that device by cudaPointerGetAttributes.
    for (const auto &[function, device] : expected)
      EXPECT_NE(run.result.out.find(function.substr(0, function.size() - 2) + " on device " + std::to_string(device)),
                std::string::npos)
          << run.result.out;
  }
}

TEST(Runtime, AKernelWithAStandInRunsAndSoDoesOneWithOnlyDeviceCode) {
  SKIP_WITHOUT_NVCC();
  for (const char *runtime : kRuntimes) {
    SCOPED_TRACE(runtime);
    TempDir out;
    auto run = run_under_leaseguard(out.path(), {runtime_victim(runtime), "kernels"}, {"--fail-on-leak"});
    EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_NE(run.result.out.find("vector_add: ok"), std::string::npos) << run.result.out;
    EXPECT_NE(run.result.out.find("scale: ok"), std::string::npos) << run.result.out;
    EXPECT_NE(run.result.out.find("variables: ok"), std::string::npos) << run.result.out;
    EXPECT_EQ(run.result.err.find("leaseguard-sim: kernel"), std::string::npos) << run.result.err;
    EXPECT_TRUE(all_leaks(run.json).empty()) << run.result.err;
  }
}

// cuBLAS on the simulator: cublasCreate loads its device code (zstd-compressed fat binaries,
// read for their kernels and variables), reads a __device__ variable, resolves ~80 driver
// entry points with dlsym and allocates; cublasDestroy frees all of it.
TEST(Runtime, CublasCreatesAndDestroysAHandleAndLeavesNothing) {
  SKIP_WITHOUT_NVCC();
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("runtime_libraries"), "cublas"}, {"--fail-on-leak"});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  for (const char *line : {"cublasCreate: CUBLAS_STATUS_SUCCESS", "cublasSetWorkspace: CUBLAS_STATUS_SUCCESS",
                           "cublasDestroy: CUBLAS_STATUS_SUCCESS"})
    EXPECT_NE(run.result.out.find(line), std::string::npos) << line << "\n" << run.result.out;
  EXPECT_TRUE(all_leaks(run.json).empty()) << run.result.err;
  // cuBLAS's own allocations are recorded (the workspace is one allocation of the program's).
  const JsonValue &process = run.json["processes"][0];
  EXPECT_GE(process["allocations"].as_number(), 3) << run.result.err;
  EXPECT_EQ(process["frees"].as_number(), process["allocations"].as_number()) << run.result.err;
}

// A cuBLAS handle dropped without cublasDestroy: its device memory is reported as leaked,
// attributed through cuBLAS's frames to the program's call of cublasCreate.
TEST(Runtime, ADroppedCublasHandlesMemoryIsReportedAtCublasCreate) {
  SKIP_WITHOUT_NVCC();
  TempDir out;
  auto run = run_under_leaseguard(out.path(), {victim("runtime_libraries"), "cublas-leak"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::vector<const JsonValue *> leaks = all_leaks(run.json);
  ASSERT_FALSE(leaks.empty()) << run.result.err;
  for (const JsonValue *leak : leaks) {
    bool through_cublas_create = false;
    bool from_the_program = false;
    for (const JsonValue &frame : (*leak)["stack"].items()) {
      const JsonValue &function = frame["function"];
      if (!function.is_null() && function.as_string() == "cublasCreate_v2") through_cublas_create = true;
      const JsonValue &file = frame["file"];
      if (!file.is_null() && file.as_string().find("runtime_libraries.cu") != std::string::npos)
        from_the_program = true;
    }
    EXPECT_TRUE(through_cublas_create && from_the_program) << run.result.err;
  }
}

// cuFFT does not get past planning on the simulator; this says where, and fails when that
// changes. After loading its device code, cufftPlan1d calls slot 7 of a private driver table
// (6e163fbe-b958-444d-835c-e182aff1991e) that no public source describes, so the simulator
// cannot answer it; the plan fails with CUFFT_INTERNAL_ERROR (5).
TEST(Runtime, CufftStopsAtAPrivateDriverTableNobodyHasDescribed) {
  SKIP_WITHOUT_NVCC();
  TempDir out;
  auto run =
      run_under_leaseguard(out.path(), {victim("runtime_libraries"), "cufft"}, {}, {{"LEASEGUARD_SIM_PROBE", "1"}});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  EXPECT_NE(run.result.out.find("cufftPlan1d: 5"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.err.find("export unknown table 6e163fbe-b958-444d-835c-e182aff1991e slot 7"), std::string::npos)
      << run.result.err;
  EXPECT_TRUE(all_leaks(run.json).empty()) << run.result.err;
}
