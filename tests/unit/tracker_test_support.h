// Helpers for tests that drive the core as the preload does and read back what it wrote.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "journal_replay.h"
#include "test_support.h"
#include "tracker.h"

namespace leaseguard {

inline Options options_for(const testing::TempDir &dir, int stack_depth = 16) {
  Options options;
  options.out_dir = dir.path();
  options.run_id = "unit";
  options.stack_depth = stack_depth;
  options.log_level = LogLevel::Quiet;
  return options;
}

// Recording where no journal can be made: the live table and the side store only.
inline Options options_without_a_journal(const testing::TempDir &dir) {
  Options options = options_for(dir);
  options.out_dir = "/proc/self/no-such-directory";
  return options;
}

inline AllocationEvent event(uint64_t address, uint64_t bytes, uint64_t context = 0xC0, Kind kind = Kind::Device) {
  AllocationEvent e;
  e.api = Api::cuMemAlloc_v2;
  e.kind = kind;
  e.address = address;
  e.bytes = bytes;
  e.device = 0;
  e.context = context;
  return e;
}

inline report::ProcessReport replay(Tracker &tracker) {
  report::ProcessReport process;
  std::string error;
  EXPECT_TRUE(report::load_journal(tracker.journal_path(), process, error)) << error;
  return process;
}

}  // namespace leaseguard
