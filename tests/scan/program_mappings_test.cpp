// The program's own mappings (interpose/scan/program_mappings.h): made by another object
// (program_code.c) they are recorded with their caller; this binary's own, which stands for
// the preload, are left out.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <dlfcn.h>

#include "program_mappings.h"

extern "C" {
void *program_map(size_t bytes);
void *program_map_unreadable(size_t bytes);
int program_unmap(void *address, size_t bytes);
void *program_remap(void *address, size_t old_bytes, size_t new_bytes);
}

namespace leaseguard::interpose {
namespace {

constexpr size_t kPage = 4096;

uintptr_t address_of(const void *memory) { return reinterpret_cast<uintptr_t>(memory); }

bool caller_is_program_code(uintptr_t caller) {
  Dl_info info{};
  return dladdr(reinterpret_cast<void *>(caller), &info) != 0 && info.dli_saddr != nullptr &&
         std::string(info.dli_sname).rfind("program_", 0) == 0;
}

TEST(ProgramMappings, AMappingTheProgramMakesIsRecordedWithItsCallerUntilUnmapped) {
  void *memory = program_map(16 * kPage);
  ASSERT_NE(memory, MAP_FAILED);
  mappings::Mapping found;
  ASSERT_TRUE(mappings::find(address_of(memory) + 5 * kPage + 8, found));
  EXPECT_EQ(found.begin, address_of(memory));
  EXPECT_EQ(found.end, address_of(memory) + 16 * kPage);
  EXPECT_TRUE(caller_is_program_code(found.caller));
  ASSERT_EQ(program_unmap(memory, 16 * kPage), 0);
  EXPECT_FALSE(mappings::find(address_of(memory), found));
}

TEST(ProgramMappings, UnmappingTheMiddleLeavesBothEnds) {
  auto *memory = static_cast<char *>(program_map(8 * kPage));
  ASSERT_NE(memory, MAP_FAILED);
  ASSERT_EQ(program_unmap(memory + 3 * kPage, 2 * kPage), 0);
  mappings::Mapping low, high, none;
  ASSERT_TRUE(mappings::find(address_of(memory), low));
  ASSERT_TRUE(mappings::find(address_of(memory) + 6 * kPage, high));
  EXPECT_FALSE(mappings::find(address_of(memory) + 3 * kPage, none));
  EXPECT_EQ(low.end, address_of(memory) + 3 * kPage);
  EXPECT_EQ(high.begin, address_of(memory) + 5 * kPage);
  EXPECT_EQ(high.end, address_of(memory) + 8 * kPage);
  EXPECT_EQ(low.caller, high.caller);
  program_unmap(memory, 8 * kPage);
}

TEST(ProgramMappings, AMovedMappingIsRecordedWhereItNowIs) {
  void *memory = program_map(2 * kPage);
  ASSERT_NE(memory, MAP_FAILED);
  mappings::Mapping before;
  ASSERT_TRUE(mappings::find(address_of(memory), before));
  void *moved = program_remap(memory, 2 * kPage, 512 * kPage);
  ASSERT_NE(moved, MAP_FAILED);
  mappings::Mapping after;
  ASSERT_TRUE(mappings::find(address_of(moved) + 400 * kPage, after));
  EXPECT_EQ(after.begin, address_of(moved));
  EXPECT_EQ(after.caller, before.caller);  // who made it, not who moved it
  if (moved != memory) {
    EXPECT_FALSE(mappings::find(address_of(memory), before));
  }
  program_unmap(moved, 512 * kPage);
}

TEST(ProgramMappings, MemoryNobodyCanReadAndLeaseguardsOwnAreLeftOut) {
  void *unreadable = program_map_unreadable(4 * kPage);
  void *own = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unreadable, MAP_FAILED);
  ASSERT_NE(own, MAP_FAILED);
  mappings::Mapping found;
  EXPECT_FALSE(mappings::find(address_of(unreadable), found));
  EXPECT_FALSE(mappings::find(address_of(own), found));
  program_unmap(unreadable, 4 * kPage);
  munmap(own, 4 * kPage);
  EXPECT_TRUE(mappings::complete());
}

TEST(ProgramMappings, ForEachListsThemApartInDescendingAddressOrder) {
  void *a = program_map(kPage), *b = program_map(kPage), *c = program_map(kPage);
  std::vector<mappings::Mapping> listed;
  listed.reserve(4096);  // the visit must not allocate: it runs inside a tracked call
  ASSERT_LT(mappings::count(), listed.capacity());
  mappings::for_each_locked(
      [](void *context, const mappings::Mapping &mapping) {
        static_cast<std::vector<mappings::Mapping> *>(context)->push_back(mapping);
      },
      &listed);
  size_t ours = 0;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(listed[i - 1].begin, listed[i].end);
    }
    for (void *memory : {a, b, c}) ours += listed[i].begin == address_of(memory) ? 1 : 0;
  }
  EXPECT_EQ(ours, 3u);
  EXPECT_EQ(mappings::count(), listed.size());
  for (void *memory : {a, b, c}) program_unmap(memory, kPage);
}

}  // namespace
}  // namespace leaseguard::interpose
