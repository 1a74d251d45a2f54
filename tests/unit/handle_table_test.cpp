// The live allocation table: insert, remove, replacement, lease marking, concurrency.
#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <vector>

#include "handle_table.h"

namespace leaseguard {
namespace {

LiveRecord record(uint64_t id, uint64_t address, uint32_t lease = 1, uint64_t group = 0) {
  LiveRecord r;
  r.details_at = static_cast<uint32_t>(id);  // carried untouched: tells records apart
  r.address = address;
  r.lease_id = lease;
  r.barrier = static_cast<uint32_t>(group);
  return r;
}

// A reference to VMM handle 0x77, told apart by `id`.
LiveRecord handle_reference(uint64_t id) {
  LiveRecord r = record(id, 0x77);
  r.api = Api::cuMemCreate;
  return r;
}

// Releases the newest reference to handle 0x77, as cuMemRelease does.
std::optional<LiveRecord> release_handle(HandleTable &table) {
  return table.remove(
      Space::VmmHandle, 0x77, [](const LiveRecord &) { return true; }, [](const LiveRecord *, bool) {});
}

// Inserts three references to handle 0x77 (ids 1, 2, 3), then takes reference `gone` out
// as a lease reclaiming its own would.
void hold_three_references_then_reclaim(HandleTable &table, uint16_t gone) {
  for (uint64_t id = 1; id <= 3; ++id)
    table.insert(handle_reference(id), true, [](LiveRecord &, const std::optional<LiveRecord> &) {});
  table.extract_if([&](const LiveRecord &r) { return r.reference == gone; });
}

// RecordSlots::emplace writes a new slot field by field (no temporary to copy): a slot
// freed by a record with every field set is handed out again holding the default record.
TEST(RecordSlots, ASlotUsedBeforeComesBackHoldingTheDefaultRecord) {
  RecordSlots slots;
  const HandleKey key{0x1000, Space::VmmHandle, 2};
  auto [used, created] = slots.emplace(key);
  ASSERT_TRUE(created);
  used->details_at = 5;
  used->lease_id = 7;
  used->barrier = 3;
  used->api = Api::cuMemCreate;
  used->reported = true;
  slots.erase(used);
  auto [again, created_again] = slots.emplace(key);
  ASSERT_TRUE(created_again);
  ASSERT_EQ(again, used);  // the same slot: its home, empty again
  const LiveRecord fresh;
  EXPECT_EQ(again->address, key.value);
  EXPECT_EQ(again->reference, key.reference);
  EXPECT_EQ(again->details_at, fresh.details_at);
  EXPECT_EQ(again->lease_id, fresh.lease_id);
  EXPECT_EQ(again->barrier, fresh.barrier);
  EXPECT_EQ(again->api, fresh.api);
  EXPECT_EQ(again->reported, fresh.reported);
  EXPECT_EQ(slots.find(key), again);
  EXPECT_EQ(slots.find(HandleKey{0x1000, Space::Address, 2}), nullptr);  // the namespace was set too
}

TEST(HandleTable, InsertRemove) {
  HandleTable table;
  EXPECT_FALSE(table.insert(record(1, 0x1000)));
  EXPECT_FALSE(table.insert(record(2, 0x2000)));
  EXPECT_EQ(table.size(), 2u);
  auto removed = table.remove(0x1000);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->details_at, 1u);
  EXPECT_FALSE(table.remove(0x1000));  // double free: not there
  EXPECT_FALSE(table.remove(0x3000));  // unknown
  EXPECT_EQ(table.size(), 1u);
}

TEST(HandleTable, ReinsertReturnsTheDisplacedRecord) {
  HandleTable table;
  table.insert(record(1, 0x1000));
  auto displaced = table.insert(record(2, 0x1000));
  ASSERT_TRUE(displaced);
  EXPECT_EQ(displaced->details_at, 1u);
  EXPECT_EQ(table.remove(0x1000)->details_at, 2u);
}

TEST(HandleTable, UnderLockCallbacksSeeTheRecord) {
  HandleTable table;
  bool ran = false;
  table.insert(record(1, 0x1000), false, [&](LiveRecord &stored, const std::optional<LiveRecord> &displaced) {
    ran = stored.details_at == 1 && !displaced;
  });
  EXPECT_TRUE(ran);
  ran = false;
  table.insert(record(3, 0x1000), false, [&](LiveRecord &stored, const std::optional<LiveRecord> &displaced) {
    ran = stored.details_at == 3 && displaced && displaced->details_at == 1;
  });
  EXPECT_TRUE(ran);
  table.insert(record(1, 0x1000));
  EXPECT_TRUE(ran);
  auto accept_all = [](const LiveRecord &) { return true; };
  uint64_t seen = 0;
  table.remove(Space::Address, 0x1000, accept_all,
               [&](const LiveRecord *r, bool) { seen = r != nullptr ? r->details_at : 99; });
  EXPECT_EQ(seen, 1u);
  table.remove(Space::Address, 0x1000, accept_all,
               [&](const LiveRecord *r, bool) { seen = r != nullptr ? r->details_at : 99; });
  EXPECT_EQ(seen, 99u);
}

// A VMM handle and an array are opaque values that may equal a device address: each lives in
// its own namespace, so neither displaces nor frees the other.
TEST(HandleTable, HandlesAndAddressesWithTheSameValueAreDistinct) {
  HandleTable table;
  LiveRecord device = record(1, 0x5000);
  LiveRecord handle = record(2, 0x5000);
  handle.api = Api::cuMemCreate;
  LiveRecord array = record(3, 0x5000);
  array.api = Api::cuArrayCreate_v2;
  EXPECT_FALSE(table.insert(device));
  EXPECT_FALSE(table.insert(handle));
  EXPECT_FALSE(table.insert(array));
  EXPECT_EQ(table.size(), 3u);
  auto accept_all = [](const LiveRecord &) { return true; };
  auto ignore = [](const LiveRecord *, bool) {};
  EXPECT_EQ(table.remove(Space::VmmHandle, 0x5000, accept_all, ignore)->details_at, 2u);
  EXPECT_EQ(table.remove(Space::Array, 0x5000, accept_all, ignore)->details_at, 3u);
  EXPECT_EQ(table.remove(0x5000)->details_at, 1u);
}

// Each retain of a live handle is a reference of its own; releases take the newest first.
TEST(HandleTable, AnotherReferenceIsKeptBesideTheFirst) {
  HandleTable table;
  uint16_t numbers[3];
  for (uint64_t id = 1; id <= 3; ++id)
    EXPECT_FALSE(table.insert(handle_reference(id), true, [&](LiveRecord &stored, const std::optional<LiveRecord> &) {
      numbers[id - 1] = stored.reference;
    }));
  EXPECT_EQ(numbers[0], 0);
  EXPECT_EQ(numbers[1], 1);
  EXPECT_EQ(numbers[2], 2);
  EXPECT_EQ(release_handle(table)->details_at, 3u);
  EXPECT_EQ(release_handle(table)->details_at, 2u);
  EXPECT_EQ(release_handle(table)->details_at, 1u);
  EXPECT_FALSE(release_handle(table));
}

// A reference other than the newest can leave first (a lease reclaiming its own reference of
// a handle another lease also holds): the value stays live while any reference is held.
TEST(HandleTable, AValueWhoseFirstReferenceLeftIsStillFound) {
  HandleTable table;
  hold_three_references_then_reclaim(table, 0);
  auto removed = release_handle(table);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->details_at, 3u);  // the newest
  removed = release_handle(table);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->details_at, 2u);
  EXPECT_FALSE(release_handle(table));
  EXPECT_EQ(table.size(), 0u);
}

// The same with the gap in the middle: a release still takes the newest (highest) held.
TEST(HandleTable, AReleaseTakesTheNewestReferencePastAGap) {
  HandleTable table;
  hold_three_references_then_reclaim(table, 1);
  EXPECT_EQ(release_handle(table)->details_at, 3u);
  EXPECT_EQ(release_handle(table)->details_at, 1u);
  EXPECT_FALSE(release_handle(table));
}

TEST(HandleTable, ARefusedRemovalKeepsTheRecord) {
  HandleTable table;
  table.insert(record(1, 0x1000));
  bool refused = false;
  EXPECT_FALSE(table.remove(
      Space::Address, 0x1000, [](const LiveRecord &) { return false; },
      [&](const LiveRecord *r, bool accepted) { refused = r != nullptr && !accepted; }));
  EXPECT_TRUE(refused);
  EXPECT_EQ(table.size(), 1u);
}

TEST(HandleTable, MarksALeaseOnceAndRemovesByPredicate) {
  HandleTable table;
  for (uint64_t i = 1; i <= 10; ++i) table.insert(record(i, i * 0x100, i <= 4 ? 2 : 1, i % 2));
  EXPECT_EQ(table.mark_lease_reported(2), 4u);
  EXPECT_EQ(table.mark_lease_reported(2), 0u);
  auto removed = table.remove_if([](const LiveRecord &r) { return r.barrier == 1; });
  EXPECT_EQ(removed.size(), 5u);
  EXPECT_EQ(table.size(), 5u);
}

TEST(HandleTable, ConcurrentInsertAndRemoveLoseNothing) {
  HandleTable table;
  constexpr int kThreads = 4, kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t address = (static_cast<uint64_t>(t) << 32) + static_cast<uint64_t>(i) * 256;
        table.insert(record(static_cast<uint64_t>(i), address));
        if (i % 2 == 0) {
          ASSERT_TRUE(table.remove(address));
        }
      }
    });
  for (auto &thread : threads) thread.join();
  EXPECT_EQ(table.size(), static_cast<size_t>(kThreads * kPerThread / 2));
}

// The shards grow through capacities that are not powers of two (8, 12, 16, 24...), and a
// removal shifts later records of its probe run back, wrapping around the end: after many
// insertions and removals in mixed order, every record left is found under its own key and
// no removed one is.
TEST(HandleTable, EveryRecordStaysFindableThroughGrowthAndRemovals) {
  HandleTable table;
  constexpr uint64_t kRecords = 20000;
  auto address = [](uint64_t i) { return 0x7f0000000000ull + i * 512; };
  for (uint64_t i = 0; i < kRecords; ++i) EXPECT_FALSE(table.insert(record(i + 1, address(i))));
  for (uint64_t i = 0; i < kRecords; i += 3) ASSERT_TRUE(table.remove(address(i))) << i;
  EXPECT_EQ(table.size(), kRecords - (kRecords + 2) / 3);
  for (uint64_t i = 0; i < kRecords; ++i) {
    auto removed = table.remove(address(i));
    if (i % 3 == 0) {
      EXPECT_FALSE(removed) << i;
    } else {
      ASSERT_TRUE(removed) << i;
      EXPECT_EQ(removed->details_at, i + 1);
    }
  }
  EXPECT_EQ(table.size(), 0u);
}

// A slot keeps its namespace in the record's tail padding (record_slots.h): replacing a
// record, and growing the table, must leave every record findable in its own namespace.
TEST(HandleTable, NamespacesSurviveReplacementAndGrowth) {
  HandleTable table;
  for (uint64_t i = 1; i <= 5000; ++i) {
    LiveRecord handle = record(i, 0x1000 + i * 256);
    handle.api = Api::cuMemCreate;  // the VMM handle namespace
    table.insert(handle);
    handle.details_at = static_cast<uint32_t>(i + 100000);
    EXPECT_TRUE(table.insert(handle));  // replaced in place
  }
  EXPECT_EQ(table.size(), 5000u);
  for (uint64_t i = 1; i <= 5000; ++i) {
    EXPECT_FALSE(table.remove(0x1000 + i * 256)) << "found in the address namespace";
    auto removed = table.remove(
        Space::VmmHandle, 0x1000 + i * 256, [](const LiveRecord &) { return true; }, [](const LiveRecord *, bool) {});
    ASSERT_TRUE(removed) << i;
    EXPECT_EQ(removed->details_at, i + 100000);
  }
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace leaseguard
