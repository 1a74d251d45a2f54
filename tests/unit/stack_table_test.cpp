// Stack interning: one id and one journal record per distinct stack.
#include <gtest/gtest.h>

#include <cstring>

#include "journal_reader.h"
#include "stack_table.h"
#include "test_support.h"

namespace leaseguard {
namespace {

__attribute__((noinline)) void code_in_the_test_binary() { asm volatile(""); }

struct StackCounter : journal::JournalVisitor {
  int stacks = 0;
  int modules = 0;
  std::vector<journal::ModuleInfo> module_infos;
  void on_stack(uint32_t, const std::vector<journal::StackFrame> &) override { ++stacks; }
  void on_module(const journal::ModuleInfo &module) override {
    ++modules;
    module_infos.push_back(module);
  }
};

journal::HeaderPayload header() {
  journal::HeaderPayload h{};
  std::memcpy(h.magic, journal::kFileMagic, sizeof h.magic);
  h.version = journal::kVersion;
  h.slot_bytes = journal::kSlotBytes;
  return h;
}

TEST(StackTable, InternsEachDistinctStackOnce) {
  testing::TempDir dir;
  journal::JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", header(), error));
  StackTable table;
  // Real code addresses, so modules resolve: the test binary and the C library.
  uintptr_t a[] = {reinterpret_cast<uintptr_t>(&code_in_the_test_binary) + 1, reinterpret_cast<uintptr_t>(&memcpy) + 1};
  uintptr_t b[] = {a[1], a[0]};
  uint32_t first = table.intern(a, 2, writer);
  EXPECT_NE(first, 0u);
  EXPECT_EQ(table.intern(a, 2, writer), first);
  uint32_t second = table.intern(b, 2, writer);
  EXPECT_NE(second, first);
  EXPECT_EQ(table.intern(a, 1, writer), table.intern(a, 1, writer));
  EXPECT_EQ(table.intern(a, 0, writer), 0u);
  EXPECT_EQ(table.size(), 3u);

  StackCounter counter;
  journal::ReadStats stats;
  ASSERT_TRUE(journal::read_journal(writer.path(), counter, stats, error));
  EXPECT_EQ(counter.stacks, 3);
  EXPECT_EQ(counter.modules, 2);  // the test executable and the C library, each once
  for (const auto &module : counter.module_infos) {
    EXPECT_FALSE(module.path.empty());
    EXPECT_FALSE(module.build_id.empty()) << module.path;
  }
}

}  // namespace
}  // namespace leaseguard
