// The side store: what is kept is given back whole, from any thread, and its places are
// never mistaken for a journal slot or for "nowhere".
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "side_store.h"

namespace leaseguard {
namespace {

AllocationDetails fields(uint64_t id) {
  AllocationDetails f;
  f.id = id;
  f.bytes = id * 3;
  f.time_ns = id * 7;
  f.context = id ^ 0xC0;
  f.device = static_cast<int16_t>(id % 5);
  f.kind = id % 2 ? Kind::Managed : Kind::Device;
  return f;
}

void expect_same(const AllocationDetails &got, const AllocationDetails &want) {
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(got.time_ns, want.time_ns);
  EXPECT_EQ(got.context, want.context);
  EXPECT_EQ(got.device, want.device);
  EXPECT_EQ(got.kind, want.kind);
}

TEST(SideStore, APlaceIsInTheSideStoreAndGivesItsFieldsBack) {
  SideStore store;
  const uint32_t details_at = store.put(fields(42));
  LiveRecord record;
  record.details_at = details_at;
  EXPECT_TRUE(record.in_side_store());
  EXPECT_FALSE(record.in_journal());
  expect_same(store.get(details_at), fields(42));
  store.release(details_at);
  const uint32_t again = store.put(fields(43));  // the same thread reuses the freed place
  EXPECT_EQ(again, details_at);
  expect_same(store.get(again), fields(43));
}

// Threads keep and release at once, each in a shard of its own, and read back one another's
// entries: nothing is lost or mixed up, and no place is "nowhere".
TEST(SideStore, ThreadsKeepAndReadEachOthersFieldsAtOnce) {
  SideStore store;
  constexpr int kThreads = 6;
  constexpr uint64_t kEach = 5000;
  std::vector<std::vector<uint32_t>> places(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) {
        const uint64_t id = static_cast<uint64_t>(t) * kEach + i;
        const uint32_t details_at = store.put(fields(id));
        ASSERT_NE(details_at, LiveRecord::kNowhere);
        places[t].push_back(details_at);
        if (i % 3 == 2) {  // release one of every three, so free lists are reused meanwhile
          store.release(places[t][i - 1]);
          places[t][i - 1] = LiveRecord::kNowhere;
        }
      }
    });
  }
  for (std::thread &thread : threads) thread.join();
  std::vector<uint32_t> seen;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < kEach; ++i) {
      const uint32_t details_at = places[t][i];
      if (details_at == LiveRecord::kNowhere) continue;
      expect_same(store.get(details_at), fields(static_cast<uint64_t>(t) * kEach + i));
      seen.push_back(details_at);
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "two live entries share a place";
}

}  // namespace
}  // namespace leaseguard
