// The reachability scan's policy (core/reachability/scan_policy.h), without a process.
#include "scan_policy.h"

#include <gtest/gtest.h>

#include "journal_format.h"

namespace leaseguard::reachability {
namespace {

TEST(ScanPolicy, AClassificationTakesAtMostHalfOfWhatTheProcessMayStillUse) {
  EXPECT_TRUE(fits_in_headroom(100 << 20, 200u << 20));
  EXPECT_FALSE(fits_in_headroom((100 << 20) + 1, 200u << 20));
  EXPECT_FALSE(fits_in_headroom(1, 0));  // a process at its limit is never classified
}

TEST(ScanPolicy, RoomIsMadeForWhatOtherThreadsMakeUntilTheyStop) {
  EXPECT_EQ(node_room_for(0, 0, 0), 16384u);
  EXPECT_EQ(node_room_for(1600, 10, 5), 1600u + 100 + 10 + 16384 + 5);
}

TEST(ScanPolicy, TheResidentEstimateGrowsWithTheNodesAndTheDeviceCopies) {
  const size_t base = resident_bytes_for(1000, 0);
  EXPECT_GE(base, 1000 * sizeof(Node) + scratch_bytes(1000));
  EXPECT_EQ(resident_bytes_for(1000, 1 << 20), base + (1 << 20));
  EXPECT_GT(resident_bytes_for(2000, 0), base);
}

// Where the scan could not see everything, nothing is called lost on a guess: what it found
// reachable is reachable, everything else unchecked.
TEST(ScanPolicy, WhatTheScanCouldNotSeeMakesLostUncheckedNeverReachableUnchecked) {
  for (uint32_t blind : {journal::kReachabilityThreadsNotStopped, journal::kReachabilityHeapUntracked,
                         journal::kReachabilityPythonObjectsUnread, journal::kReachabilityPagesUnread}) {
    SCOPED_TRACE(blind);
    EXPECT_TRUE(lost_is_unchecked(blind));
    EXPECT_EQ(reported_class(Class::Direct, blind), Class::Unchecked);
    EXPECT_EQ(reported_class(Class::Indirect, blind), Class::Unchecked);
    EXPECT_EQ(reported_class(Class::Reachable, blind), Class::Reachable);
  }
}

// Bounds on what was read (device memory too large, mappings past the budget, no memory)
// are said in the report but do not make a found class a guess.
TEST(ScanPolicy, BoundsAreSaidButLeaveTheClassesAsFound) {
  const uint32_t bounds =
      journal::kReachabilityDeviceBounded | journal::kReachabilityMappingsBounded | journal::kReachabilityDeviceUnread;
  EXPECT_FALSE(lost_is_unchecked(bounds));
  EXPECT_FALSE(lost_is_unchecked(0));
  for (Class found : {Class::Direct, Class::Indirect, Class::Reachable, Class::Unchecked})
    EXPECT_EQ(reported_class(found, bounds), found);
}

}  // namespace
}  // namespace leaseguard::reachability
