// Which pages the scan may read in place (interpose/scan/resident_pages.h): only present pages
// of readable mappings, found without touching any other, by PAGEMAP_SCAN and by the pagemap
// file alike.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "resident_pages.h"

namespace leaseguard::interpose {
namespace {

using reachability::MemoryRange;

constexpr size_t kPage = 4096;

class ResidentPagesTest : public ::testing::TestWithParam<bool> {
 protected:
  // The resident ranges of this process now, by the method the parameter names.
  std::vector<MemoryRange> resident(ResidentPages &result) {
    std::ifstream maps_file("/proc/self/maps");
    std::stringstream maps;
    maps << maps_file.rdbuf();
    const std::string text = maps.str();
    const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    EXPECT_GE(pagemap, 0);
    std::vector<MemoryRange> ranges(1 << 16);
    result = resident_ranges(text.c_str(), pagemap, ranges.data(), ranges.size(), GetParam());
    close(pagemap);
    ranges.resize(result.count);
    return ranges;
  }

  static bool readable(const std::vector<MemoryRange> &ranges, const void *address) {
    const auto at = reinterpret_cast<uintptr_t>(address);
    for (const MemoryRange &range : ranges)
      if (range.begin <= at && at < range.end) return true;
    return false;
  }
};

TEST_P(ResidentPagesTest, OnlyTouchedPagesOfReadableMappingsAreReadable) {
  auto *memory =
      static_cast<char *>(mmap(nullptr, 16 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(memory, MAP_FAILED);
  memory[0] = 1;
  memory[kPage] = 1;
  memory[5 * kPage] = 1;
  ASSERT_EQ(mprotect(memory + kPage, kPage, PROT_NONE), 0);  // a guard page, present but unreadable
  ResidentPages result;
  const std::vector<MemoryRange> ranges = resident(result);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_GE(ranges[i].begin, ranges[i - 1].end) << "sorted, disjoint";
  EXPECT_TRUE(readable(ranges, memory));
  EXPECT_FALSE(readable(ranges, memory + kPage));
  EXPECT_FALSE(readable(ranges, memory + 2 * kPage));  // never touched
  EXPECT_TRUE(readable(ranges, memory + 5 * kPage));
  EXPECT_FALSE(readable(ranges, memory + 6 * kPage));
  EXPECT_FALSE(result.bounded);
  munmap(memory, 16 * kPage);
}

// A sparse shared ring (MAP_SHARED | MAP_NORESERVE): finding its one touched page commits no
// other (reading it whole committed every page).
TEST_P(ResidentPagesTest, ASparseSharedRingStaysSparse) {
  constexpr size_t kRing = 64 << 20;
  auto *ring = static_cast<char *>(
      mmap(nullptr, kRing, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(ring, MAP_FAILED);
  ring[kRing / 2] = 1;
  ResidentPages result;
  const std::vector<MemoryRange> ranges = resident(result);
  EXPECT_TRUE(readable(ranges, ring + kRing / 2));
  EXPECT_FALSE(readable(ranges, ring));
  std::vector<unsigned char> in_core(kRing / kPage);
  ASSERT_EQ(mincore(ring, kRing, in_core.data()), 0);
  size_t resident_pages = 0;
  for (unsigned char page : in_core) resident_pages += page & 1;
  EXPECT_EQ(resident_pages, 1u);
  munmap(ring, kRing);
}

// MADV_GUARD_INSTALL (Linux 6.13) makes pages fault though /proc/PID/maps shows them rw-p.
TEST_P(ResidentPagesTest, GuardPagesInstalledByMadviseAreNotReadable) {
  constexpr int kGuardInstall = 102;
  auto *memory =
      static_cast<char *>(mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(memory, MAP_FAILED);
  for (size_t i = 0; i < 4; ++i) memory[i * kPage] = 1;
  if (madvise(memory + kPage, kPage, kGuardInstall) != 0) {
    munmap(memory, 4 * kPage);
    GTEST_SKIP() << "no MADV_GUARD_INSTALL on this kernel";
  }
  ResidentPages result;
  const std::vector<MemoryRange> ranges = resident(result);
  EXPECT_TRUE(readable(ranges, memory));
  EXPECT_FALSE(readable(ranges, memory + kPage));
  EXPECT_TRUE(readable(ranges, memory + 2 * kPage));
  EXPECT_FALSE(result.swapped) << "a guard page is not a page swapped out";
  munmap(memory, 4 * kPage);
}

TEST_P(ResidentPagesTest, MoreRunsThanRoomAreSaidToBeBounded) {
  std::ifstream maps_file("/proc/self/maps");
  std::stringstream maps;
  maps << maps_file.rdbuf();
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  MemoryRange one[1];
  const ResidentPages result = resident_ranges(maps.str().c_str(), pagemap, one, 1, GetParam());
  close(pagemap);
  EXPECT_EQ(result.count, 1u);
  EXPECT_TRUE(result.bounded);
}

INSTANTIATE_TEST_SUITE_P(ScanIoctlAndPagemapFile, ResidentPagesTest, ::testing::Bool());

}  // namespace
}  // namespace leaseguard::interpose
