// Every allocation family beyond cuMemAlloc under `leaseguard run --sim`: VMM handles,
// references and reserved ranges, pools, arrays, IPC mappings, host registrations and
// external memory, each recorded with its kind, entry point and size, and each given back
// through its own release when a reclaim lease ends (tests/victims/resource_families.c).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>
#include <tuple>

#include "process_runner.h"
#include "../unit/test_support.h"

namespace leaseguard::testing {
namespace {

using report::JsonValue;
using LeakKey =
    std::tuple<std::string, std::string, double, double, std::string>;  // api, kind, bytes, device, function

// The function in the stack that names the leak site (import_memfd is a helper).
std::string leak_site(const JsonValue &leak) {
  for (const auto &frame : leak["stack"].items())
    if (!frame["function"].is_null() && frame["function"].as_string().rfind("leak_", 0) == 0)
      return frame["function"].as_string();
  for (const auto &frame : leak["stack"].items())
    if (!frame["function"].is_null() && frame["function"].as_string() == "ipc_child") return "ipc_child";
  return first_function(leak);
}

TEST(Families, EveryFamilyIsRecordedWithItsKindEntryPointAndSize) {
  TempDir dir;
  // Listed whether the program still reaches them or not: this test is about recording.
  auto run =
      run_under_leaseguard(dir.path(), {victim("resource_families")}, {"--show-reachable"}, kForkedChildrenInherit);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  std::set<LeakKey> seen;
  for (const JsonValue *leak : all_leaks(run.json))
    seen.insert({(*leak)["api"].as_string(), (*leak)["kind"].as_string(), (*leak)["bytes"].as_number(),
                 (*leak)["device"].as_number(), leak_site(*leak)});
  const std::set<LeakKey> expected = {
      {"cuMemCreate", "vmm", 4 << 20, 0, "leak_vmm_handle"},
      {"cuMemAddressReserve", "vmm", 6 << 20, -1, "leak_vmm_range"},
      // The retained reference outlives the create's: references to one handle are
      // interchangeable, and the newest is released first.
      {"cuMemCreate", "vmm", 2 << 20, 0, "leak_vmm_retained"},
      {"cuMemCreate", "vmm", 2 << 20, -1, "leak_vmm_host_located"},  // host memory: no device
      {"cuMemPoolCreate", "pool", 0, 0, "leak_pool"},
      {"cuMemAllocFromPoolAsync", "async", 3000, 0, "leak_from_destroyed_pool"},
      {"cuArrayCreate_v2", "array", 16000, 0, "leak_array_v2"},
      {"cuArrayCreate", "array", 64, 0, "leak_array_legacy"},
      {"cuMipmappedArrayCreate", "array", 585, 0, "leak_mipmapped"},
      {"cuMemHostRegister_v2", "registered", 8192, 0, "leak_registration"},
      {"cuImportExternalMemory", "external", 65536, 0, "leak_external"},
      {"cuExternalMemoryGetMappedBuffer", "external", 4096, 0, "leak_external_buffer"},
      {"cuIpcOpenMemHandle_v2", "ipc", 5000, 0, "ipc_child"},  // in the child; the refused cuMemFree kept it
  };
  EXPECT_EQ(seen, expected);

  // The pool destroyed in use is said, with what was still allocated from it; the refused
  // cuMemFree of the IPC mapping is an unknown free in the child.
  ASSERT_EQ(run.json["processes"].size(), 2u);
  std::vector<double> pool_bytes;
  double unknown_frees = 0;
  for (const auto &process : run.json["processes"].items()) {
    for (const auto &pool : process["pools_destroyed_in_use"].items())
      pool_bytes.push_back(pool["outstanding_bytes"].as_number());
    unknown_frees += process["unknown_frees"].as_number();
  }
  EXPECT_EQ(pool_bytes, std::vector<double>{3072});
  EXPECT_EQ(unknown_frees, 1);

  // The text report names each family in words.
  for (const char *words :
       {"VMM reserved address range", "VMM physical memory handle", "memory pool", "IPC mapping",
        "host memory registration", "imported external memory", "buffer mapped from external memory", "mipmapped array",
        "was destroyed at", "still allocated from it"})
    EXPECT_NE((run.result.out + run.result.err).find(words), std::string::npos) << words;
}

// A free by another family's entry point is its own finding, not a double free, whether the
// value was live or freed already by its own release; a true double free stays one; and a
// process with no leaks is never said to have leaked (tests/victims/wrong_family_free.c).
TEST(Families, AWrongFamilyFreeIsItsOwnFindingAndTheHeaderSpeaksOfLeaksOnlyWithLeaks) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("wrong_family_free")}, {"--fail-on-leak"});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  EXPECT_EQ(run.json["summary"]["leaked_allocations"].as_number(), 0);
  ASSERT_EQ(process["double_frees"].size(), 1u) << run.result.err;
  EXPECT_EQ(process["double_frees"][0]["api"].as_string(), "cuMemFree_v2");
  EXPECT_EQ(first_function(process["double_frees"][0]), "free_device_twice");
  ASSERT_EQ(process["wrong_family_frees"].size(), 2u) << run.result.err;
  std::map<std::string, const JsonValue *> by_site;
  for (const JsonValue &wrong : process["wrong_family_frees"].items()) by_site[first_function(wrong)] = &wrong;
  ASSERT_TRUE(by_site.count("free_host_after_unregister") && by_site.count("free_host_while_registered"));
  const JsonValue &after = *by_site["free_host_after_unregister"];
  const JsonValue &during = *by_site["free_host_while_registered"];
  for (const JsonValue *wrong : {&after, &during}) {
    EXPECT_EQ((*wrong)["api"].as_string(), "cuMemFreeHost");
    EXPECT_EQ((*wrong)["allocated_by"].as_string(), "cuMemHostRegister_v2");
  }
  EXPECT_TRUE(after["freed_ms"].type() == JsonValue::Type::Number);  // its own release freed it first
  EXPECT_TRUE(during["freed_ms"].is_null());                         // live when freed the wrong way
  const std::string &text = run.result.err;
  EXPECT_NE(text.find("ERROR: leaseguard: detected invalid frees (and no leaks)"), std::string::npos) << text;
  EXPECT_EQ(text.find("detected device memory leaks"), std::string::npos) << text;
  EXPECT_NE(text.find("Wrong-family free of"), std::string::npos) << text;
  EXPECT_NE(text.find("made by cuMemHostRegister_v2, which cuMemFreeHost does not free"), std::string::npos) << text;
  EXPECT_NE(text.find("Double free of"), std::string::npos) << text;
}

TEST(Families, AReclaimLeaseGivesEveryFamilyBackThroughItsOwnRelease) {
  TempDir dir;
  auto run = run_under_leaseguard(dir.path(), {victim("resource_families"), "reclaim"});
  // The victim checks the device memory is back, the registration gone and every late
  // release answered with success; it exits non-zero otherwise.
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  EXPECT_NE(run.result.out.find("reclaimed every family"), std::string::npos);
  EXPECT_EQ(run.result.err.find("failed with driver status"), std::string::npos) << run.result.err;
  const JsonValue &process = run.json["processes"][0];
  const JsonValue *families = nullptr;
  for (const auto &lease : process["leases"].items())
    if (lease["name"].as_string() == "families") families = &lease;
  ASSERT_NE(families, nullptr);
  EXPECT_EQ((*families)["leaks"].size(), 12u);
  for (const auto &leak : (*families)["leaks"].items())
    EXPECT_TRUE(leak["reclaimed"].as_bool()) << leak["api"].as_string();
  EXPECT_EQ((*families)["late_frees"].size(), 11u);
}

}  // namespace
}  // namespace leaseguard::testing
