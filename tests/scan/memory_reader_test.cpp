// Reading the process's own memory without touching it (interpose/scan/memory_reader.h): what
// is readable is copied, and where a load would fault the copy stops, with no signal.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "memory_reader.h"

namespace leaseguard::interpose {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

uintptr_t address_of(const void *memory) { return reinterpret_cast<uintptr_t>(memory); }

// Three pages: readable, PROT_NONE (a guard page), readable.
struct GuardedPages {
  char *base = nullptr;
  GuardedPages() {
    void *memory = mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = memory == MAP_FAILED ? nullptr : static_cast<char *>(memory);
    if (base == nullptr) return;
    std::memset(base, 'a', 3 * kPage);
    mprotect(base + kPage, kPage, PROT_NONE);
  }
  ~GuardedPages() {
    if (base != nullptr) munmap(base, 3 * kPage);
  }
};

TEST(MemoryReader, CopiesWhatIsReadable) {
  std::vector<uint64_t> words = {1, 2, 3, 0x7f00deadbeef};
  std::vector<uint64_t> copy(words.size());
  EXPECT_EQ(memory::copy(copy.data(), address_of(words.data()), words.size() * 8), words.size() * 8);
  EXPECT_EQ(copy, words);
}

TEST(MemoryReader, AGuardPageEndsTheCopyWithoutAFault) {
  GuardedPages pages;
  ASSERT_NE(pages.base, nullptr);
  std::vector<char> copy(3 * kPage, 0);
  // From the first page on: up to the guard page, and not a byte of it.
  EXPECT_EQ(memory::copy(copy.data(), address_of(pages.base), 3 * kPage), kPage);
  EXPECT_EQ(copy[kPage - 1], 'a');
  EXPECT_EQ(copy[kPage], 0);
  // From inside the guard page: nothing.
  EXPECT_EQ(memory::copy(copy.data(), address_of(pages.base + kPage + 8), 64), 0u);
  // Past it: readable again.
  EXPECT_EQ(memory::copy(copy.data(), address_of(pages.base + 2 * kPage), 64), 64u);
}

TEST(MemoryReader, MemoryUnmappedUnderTheReaderReadsAsNothing) {
  void *memory = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  ASSERT_EQ(munmap(memory, kPage), 0);
  char copy[64];
  EXPECT_EQ(memory::copy(copy, address_of(memory), sizeof copy), 0u);
}

TEST(MemoryReader, RangesAreCopiedInOrderUpToTheFirstUnreadableOne) {
  GuardedPages pages;
  ASSERT_NE(pages.base, nullptr);
  uint32_t fields[3] = {};
  const iovec local[3] = {{&fields[0], 4}, {&fields[1], 4}, {&fields[2], 4}};
  const iovec readable[3] = {{pages.base, 4}, {pages.base + 2 * kPage, 4}, {pages.base + 16, 4}};
  EXPECT_EQ(memory::copy_ranges(local, readable, 3), 12u);
  const iovec guarded[3] = {{pages.base, 4}, {pages.base + kPage, 4}, {pages.base + 2 * kPage, 4}};
  EXPECT_EQ(memory::copy_ranges(local, guarded, 3), 4u);
  EXPECT_EQ(memory::copy_ranges(local, guarded, 0), 0u);
}

}  // namespace
}  // namespace leaseguard::interpose
