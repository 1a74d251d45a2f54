// The preload itself under AddressSanitizer + UBSan: victims run with the instrumented copy
// (LD_PRELOAD=libasan.so:libleaseguard_preload_asan.so) and must produce the same reports,
// with no sanitizer finding. Built only by the asan preset. Kept apart, as ASan cannot run
// them: victims that die of signals (ASan handles SIGSEGV itself), the RTLD_NEXT
// interposer (ASan's own interceptors sit in the same lookup chain), and setuid programs.
#include <gtest/gtest.h>

#include "process_runner.h"
#include "../unit/test_support.h"

#ifdef LEASEGUARD_PRELOAD_ASAN

namespace leaseguard::testing {
namespace {

RunResult run_with_asan_preload(const std::vector<std::string> &command, const std::string &out,
                                const std::map<std::string, std::string> &extra = {}) {
  std::map<std::string, std::string> environment = {
      {"LD_PRELOAD", std::string(LEASEGUARD_LIBASAN) + ":" + LEASEGUARD_PRELOAD_ASAN},
      {"LD_LIBRARY_PATH", LEASEGUARD_SIM_DIR},
      {"LEASEGUARD_OUT", out},
      // Host leaks are the victims' business here; memory errors and UB in the preload are ours.
      {"ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0:exitcode=86"},
      {"UBSAN_OPTIONS", "halt_on_error=1:exitcode=87:print_stacktrace=1"}};
  for (const auto &[name, value] : extra) environment[name] = value;
  return run_process(command, environment);
}

report::JsonValue report_of(const std::string &out) {
  auto result = run_process({LEASEGUARD_BIN, "report", "--quiet", "--format", "json=" + out + "/r.json", out});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  report::JsonValue json;
  std::string error;
  report::JsonValue::parse(read_text(out + "/r.json"), json, error);
  return json;
}

TEST(PreloadUnderAsan, EveryHookedEntryPoint) {
  TempDir out;
  auto result = run_with_asan_preload({victim("direct_calls")}, out.path(), {{"LEASEGUARD_SIM_DEVICES", "2"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("ERROR: AddressSanitizer"), std::string::npos) << result.err;
  // Every one recorded, leaked or still reachable at exit.
  const report::JsonValue report = report_of(out.path());
  EXPECT_EQ(
      report["summary"]["leaked_allocations"].as_number() + report["summary"]["reachable_allocations"].as_number(), 15);
}

TEST(PreloadUnderAsan, ThreadsLeasesDlopenAndCuGetProcAddress) {
  // Not fork_storm: GCC 12's AddressSanitizer allocator takes no lock around fork(), so a
  // child forked while another thread is inside it deadlocks in its first allocation, with
  // or without leaseguard (LLVM 17's sanitizers added the fork handlers). The normal build
  // runs fork_storm (CrashConsistency.ForkWhileOtherThreadsAllocate).
  for (const char *name : {"threads", "leases", "dlopen_calls", "resource_families", "robustness"}) {
    TempDir out;
    // resource_families's IPC child is forked after cuInit, as kForkedChildrenInherit says.
    auto result = run_with_asan_preload({victim(name)}, out.path(), kForkedChildrenInherit);
    EXPECT_EQ(result.exit_code, 0) << name << "\n" << result.err;
    EXPECT_EQ(result.err.find("runtime error"), std::string::npos) << result.err;
    // Recorded: live at the end, leaked or still reachable.
    const report::JsonValue report = report_of(out.path());
    const report::JsonValue &summary = report["summary"];
    EXPECT_GT(summary["leaked_allocations"].as_number() + summary["reachable_allocations"].as_number(), 0) << name;
  }
  TempDir out;
  auto replay = run_with_asan_preload(
      {victim("proc_address_replay"), std::string(LEASEGUARD_TEST_DATA) + "/cudart-13.0-driver-lookups.tsv",
       "cuMemAlloc", "cuMemAlloc_v2", "cuMemFree", "cuMemFree_v2", "cuGetProcAddress", "cuGetProcAddress_v2"},
      out.path());
  // Only some hooked names are listed, so the others count as mismatches: the point here is
  // that the lookups run cleanly under ASan, not the verdict (checked by the normal build).
  EXPECT_NE(replay.out.find("replayed 439 lookups"), std::string::npos) << replay.out << replay.err;
  EXPECT_EQ(replay.err.find("AddressSanitizer"), std::string::npos) << replay.err;
}

TEST(PreloadUnderAsan, FidelityModes) {
  for (const std::vector<std::string> &mode : {std::vector<std::string>{"exceptions"},
                                               {"threads"},
                                               {"signals"},
                                               {"fork"},
                                               {"static"},
                                               {"dlopen", victim("liballocating_plugin.so")}}) {
    TempDir out;
    std::vector<std::string> command = {victim("fidelity")};
    command.insert(command.end(), mode.begin(), mode.end());
    auto result = run_with_asan_preload(command, out.path());
    EXPECT_EQ(result.exit_code, 0) << mode[0] << "\n" << result.err;
    EXPECT_EQ(report_of(out.path())["summary"]["leaked_allocations"].as_number(), 0) << mode[0];
  }
}

}  // namespace
}  // namespace leaseguard::testing

#endif
