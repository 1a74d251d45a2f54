// The HIP runtime under leaseguard: every allocation entry point of the simulated
// libamdhip64.so.5 recorded with its kind and size, hipDeviceReset as an implicit free,
// reclaim through each family's release, lookups by dlopen handle, and the REAL Debian
// libamdhip64.so.5 on a machine without an AMD GPU: its statuses reach the program unchanged
// and no failed allocation is reported (tests/victims/hip_families.c, hip_dlopen.c).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;
using LeakKey = std::tuple<std::string, std::string, double, std::string>;  // api, kind, bytes, function

std::string leak_site(const JsonValue &leak) {
  for (const auto &frame : leak["stack"].items()) {
    if (frame["function"].is_null()) continue;
    const std::string &function = frame["function"].as_string();
    if (function.rfind("leak_", 0) == 0 || function == "ipc_child" || function == "reset_frees_these") return function;
  }
  return "";
}

std::set<LeakKey> leaks_of(const JsonValue &report, const std::string &ended_by) {
  std::set<LeakKey> seen;
  for (const auto &process : report["processes"].items())
    for (const auto &lease : process["leases"].items()) {
      if (lease["ended_by"].as_string() != ended_by) continue;
      for (const auto &leak : lease["leaks"].items())
        seen.insert({leak["api"].as_string(), leak["kind"].as_string(), leak["bytes"].as_number(), leak_site(leak)});
    }
  return seen;
}

#define REQUIRE_HIP_VICTIMS() \
  if (!LEASEGUARD_HAVE_HIP) GTEST_SKIP() << "no HIP headers here (scripts/setup.sh installs libamdhip64-dev)"

TEST(Hip, EveryEntryPointIsRecordedWithItsKindAndSize) {
  REQUIRE_HIP_VICTIMS();
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("hip_families")}, {}, kForkedChildrenInherit);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("hip_families leaked 20"), std::string::npos);
  const std::set<LeakKey> expected = {
      {"hipMalloc", "device", 1000, "leak_hipMalloc"},  // its 0-byte request and hipFree(NULL) left no trace
      {"hipExtMallocWithFlags", "device", 1016, "leak_hipExtMallocWithFlags"},
      {"hipMallocManaged", "managed", 1032, "leak_hipMallocManaged"},
      {"hipMallocPitch", "pitched", 1536, "leak_hipMallocPitch"},
      {"hipMemAllocPitch", "pitched", 2560, "leak_hipMemAllocPitch"},
      {"hipMalloc3D", "pitched", 3072, "leak_hipMalloc3D"},
      {"hipMallocArray", "array", 400, "leak_hipMallocArray"},
      {"hipMalloc3DArray", "array", 256, "leak_hipMalloc3DArray"},
      {"hipArrayCreate", "array", 128, "leak_hipArrayCreate"},
      {"hipArray3DCreate", "array", 192, "leak_hipArray3DCreate"},
      {"hipHostMalloc", "host", 1048, "leak_hipHostMalloc"},
      {"hipHostAlloc", "host", 1064, "leak_hipHostAlloc"},
      {"hipMallocHost", "host", 1080, "leak_hipMallocHost"},
      {"hipMemAllocHost", "host", 1096, "leak_hipMemAllocHost"},
      {"hipMallocAsync", "async", 1112, "leak_hipMallocAsync"},
      {"hipMemPoolCreate", "pool", 0, "leak_hipMemPoolCreate"},
      {"hipMallocFromPoolAsync", "async", 1128, "leak_hipMallocFromPoolAsync"},
      {"hipMemCreate", "vmm", 4 << 20, "leak_hipMemCreate"},
      {"hipMemAddressReserve", "vmm", 6 << 20, "leak_hipMemAddressReserve"},
      {"hipHostRegister", "registered", 8192, "leak_hipHostRegister"},
      {"hipIpcOpenMemHandle", "ipc", 5000, "ipc_child"},  // in the forked child
  };
  EXPECT_EQ(leaks_of(run.json, "exit"), expected);
  // hipDeviceReset freed what the device held then: reported as leaks at the reset.
  const std::set<LeakKey> at_reset = {{"hipMalloc", "device", 7000, "reset_frees_these"},
                                      {"hipHostMalloc", "host", 7016, "reset_frees_these"}};
  EXPECT_EQ(leaks_of(run.json, "context_destroy"), at_reset);
}

TEST(Hip, AReclaimLeaseGivesEveryFamilyBack) {
  REQUIRE_HIP_VICTIMS();
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("hip_families"), "reclaim"});
  // The victim checks the memory is back, the registration gone and late frees succeed.
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_NE(run.result.out.find("reclaimed every HIP family"), std::string::npos);
  EXPECT_EQ(run.result.err.find("failed with driver status"), std::string::npos) << run.result.err;
  size_t reclaimed = 0;
  for (const auto &lease : run.json["processes"][0]["leases"].items())
    for (const auto &leak : lease["leaks"].items()) reclaimed += leak["reclaimed"].as_bool() ? 1 : 0;
  EXPECT_EQ(reclaimed, 20u);
}

// Another thread allocates on the device while a reset of it is returning: that allocation
// is not the reset's (which the report would list as gone with it, and then forget).
TEST(Hip, ALeakMadeWhileADeviceResetIsReturningIsReported) {
  REQUIRE_HIP_VICTIMS();
  TempDir dir;
  auto run =
      run_under_leaseguard(dir.path(), {victim("hip_reset_race")}, {}, {{"LEASEGUARD_SIM_DESTROY_LINGER_MS", "2000"}});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_NE(run.result.out.find("allocated before the reset returned"), std::string::npos)
      << "the allocation did not happen while the reset was returning";
  std::map<std::string, std::string> ended_by_of = ended_by_of_first_functions(run.json);
  EXPECT_EQ(ended_by_of.size(), 2u);
  EXPECT_EQ(ended_by_of["leak_before_reset"], "context_destroy");
  EXPECT_EQ(ended_by_of["leak_after_reset"], "exit");
}

TEST(Hip, LookupsThroughADlopenHandleAreSeen) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("hip_dlopen")});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("hip_dlopen done"), std::string::npos);
  auto leaks = all_leaks(run.json);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["api"].as_string(), "hipMalloc");
  EXPECT_EQ((*leaks[0])["bytes"].as_number(), 5000);
  EXPECT_EQ((*leaks[0])["stack"][0]["function"].as_string(), "leak_through_hip_dlsym");
}

// In front of the real runtime with no AMD GPU every call fails; leaseguard must hand each
// status back unchanged, interpose the calls (the loader binds them to the preload), and
// report nothing, since nothing was allocated.
TEST(Hip, InFrontOfTheRealRuntimeStatusesPassUnchangedAndFailuresAreNotLeaks) {
  REQUIRE_HIP_VICTIMS();
  const std::string real_library = LEASEGUARD_REAL_HIP_LIBRARY;  // found by CMake at configure time
  if (real_library.empty() || access(real_library.c_str(), R_OK) != 0)
    GTEST_SKIP() << "no real libamdhip64.so.5 here (scripts/setup.sh installs libamdhip64-dev)";
  auto plain = run_process({victim("hip_families"), "real"}, {}, {"LD_LIBRARY_PATH", "LD_PRELOAD"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("hipMalloc="), std::string::npos);
  EXPECT_EQ(plain.out.find("hipMalloc=0\n"), std::string::npos)
      << "a GPU is here: this test is for machines without one";

  TempDir dir;
  auto guarded = run_process({LEASEGUARD_BIN, "run", "--quiet", "--out", dir.path(), "--format",
                              "json=" + (dir / "report.json"), "--", victim("hip_families"), "real"},
                             {{"LD_DEBUG", "bindings"}}, {"LD_LIBRARY_PATH"});
  ASSERT_EQ(guarded.exit_code, 0) << guarded.err;
  EXPECT_EQ(guarded.out, plain.out);  // every status, unchanged
  // The calls went through leaseguard, and on to the real runtime.
  EXPECT_NE(guarded.err.find("/libleaseguard_preload.so [0]: normal symbol `hipMalloc' [hip_4.2]"), std::string::npos);
  bool forwarded_to_real = false;
  std::istringstream lines(guarded.err);
  for (std::string line; std::getline(lines, line);)
    forwarded_to_real =
        forwarded_to_real || (line.find("libleaseguard_preload.so [0] to ") != std::string::npos &&
                              line.find("libamdhip64.so.5 [0]: normal symbol `hipMalloc'") != std::string::npos &&
                              line.find(LEASEGUARD_SIM_DIR) == std::string::npos);
  EXPECT_TRUE(forwarded_to_real) << "the preload's hipMalloc did not reach the real runtime";
  JsonValue report;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(read_text(dir / "report.json"), report, error)) << error;
  EXPECT_EQ(report["summary"]["leaked_allocations"].as_number(), 0);
  EXPECT_EQ(report["processes"][0]["allocations"].as_number(), 0);
}

}  // namespace
}  // namespace leaseguard::testing
