// Replay rules of journal_replay.cpp on hand-written journals: a crash, unknown frees,
// damaged input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "journal_writer.h"
#include "report/renderers.h"
#include "report/report_model.h"
#include "test_support.h"

namespace leaseguard::report {
namespace {

class JournalBuilder {
 public:
  explicit JournalBuilder(const std::string &path) {
    journal::HeaderPayload header{};
    std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
    header.version = journal::kVersion;
    header.slot_bytes = journal::kSlotBytes;
    header.pid = 77;
    header.start_monotonic_ns = 1'000'000'000;
    std::string error;
    EXPECT_TRUE(writer_.open(path, header, error)) << error;
    lease_begin(1, "process");
  }
  void lease_begin(uint32_t id, const std::string &name) {
    std::vector<unsigned char> payload(sizeof(journal::LeaseBeginPayload) + name.size());
    journal::LeaseBeginPayload begin{};
    begin.lease_id = id;
    begin.name_bytes = static_cast<uint32_t>(name.size());
    begin.time_ns = 1'000'000'000;
    std::memcpy(payload.data(), &begin, sizeof begin);
    std::memcpy(payload.data() + sizeof begin, name.data(), name.size());
    writer_.append(journal::RecordType::LeaseBegin, payload.data(), payload.size());
  }
  void alloc(uint64_t id, uint64_t bytes, uint32_t lease = 1, uint64_t time_ms = 0) {
    journal::AllocPayload alloc{};
    alloc.id = id;
    alloc.address = id * 0x1000;
    alloc.bytes = bytes;
    alloc.lease_id = lease;
    alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
    alloc.time_ns = 1'000'000'000 + time_ms * 1'000'000;
    writer_.append(journal::RecordType::Alloc, &alloc, sizeof alloc);
  }
  void free(uint64_t id, uint8_t flags = 0) {
    journal::FreePayload free_record{};
    free_record.id = id;
    free_record.flags = flags;
    writer_.append(journal::RecordType::Free, &free_record, sizeof free_record);
  }
  void lease_end(uint32_t id, EndedBy by, uint64_t time_ms) {
    journal::LeaseEndPayload end{};
    end.lease_id = id;
    end.ended_by = static_cast<uint8_t>(by);
    end.time_ns = 1'000'000'000 + time_ms * 1'000'000;
    writer_.append(journal::RecordType::LeaseEnd, &end, sizeof end);
  }
  void process_end() {
    journal::ProcessEndPayload end{};
    end.time_ns = 2'000'000'000;
    writer_.append(journal::RecordType::ProcessEnd, &end, sizeof end);
  }
  const std::string &path() const { return writer_.path(); }

 private:
  journal::JournalWriter writer_;
};

TEST(Replay, AProcessThatDiedReportsItsLiveAllocationsAsCrash) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  journal.alloc(1, 100, 1, 10);
  journal.alloc(2, 200);
  journal.free(2);
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error));
  EXPECT_FALSE(process.complete);
  ASSERT_EQ(process.leases.size(), 1u);
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::Crash);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 100u);
}

TEST(Replay, CountsUnknownAndLateFrees) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  journal.lease_begin(2, "job");
  journal.alloc(1, 100, 2, 0);
  journal.lease_end(2, EndedBy::Expiry, 50);
  journal.free(1);                          // late: after its lease expired
  journal.free(0, journal::kFreeUnknown);   // never allocated
  journal.process_end();
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error));
  EXPECT_TRUE(process.complete);
  EXPECT_EQ(process.late_frees, 1u);
  EXPECT_EQ(process.unknown_frees, 1u);
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].name, "job");
  EXPECT_EQ(process.leases[0].ended_by, EndedBy::Expiry);
  EXPECT_EQ(process.leases[0].leaks.at(0).age_ms, 50u);
  EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);  // the process lease, no leaks
  EXPECT_TRUE(process.leases[1].leaks.empty());
}

TEST(Replay, TextReportGroupsByStackLargestFirst) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  journal.alloc(1, 100);
  journal.alloc(2, 100);
  journal.alloc(3, 5000);
  journal.process_end();
  Report report;
  std::string error;
  ASSERT_TRUE(load_report({journal.path()}, {{77, ExitStatus{0, std::nullopt}}}, report, error));
  std::string text = render_text(report);
  // All three share stack 0 ("no stack"), so one group of 5200 bytes.
  EXPECT_NE(text.find("Leak of 5200 byte(s) in 3 allocation(s) [cuMemAlloc_v2, device memory, device 0] allocated from:"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("exited with code 0"), std::string::npos);
  EXPECT_NE(text.find("SUMMARY: leaseguard: 5200 byte(s) leaked in 3 allocation(s)."), std::string::npos);
}

TEST(Replay, DamagedJournalIsPartialAndSaysSo) {
  testing::TempDir dir;
  std::string path;
  {
    JournalBuilder journal(dir / "j.journal");
    journal.alloc(1, 100);
    journal.alloc(2, 200);
    path = journal.path();
  }
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(2 * journal::kSlotBytes + 3));  // the first alloc's tag
    file.put(static_cast<char>(0x11));
  }
  Report report;
  std::string error;
  ASSERT_TRUE(load_report({path}, {}, report, error));
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("partial"), std::string::npos);
  EXPECT_EQ(report.leaked_allocations(), 1u);
}

TEST(Replay, UnreadableInputIsAnError) {
  testing::TempDir dir;
  std::ofstream(dir / "bogus.journal") << "not a journal at all, but long enough to hold one slot of data......";
  Report report;
  std::string error;
  EXPECT_FALSE(load_report({dir / "bogus.journal"}, {}, report, error));
  EXPECT_NE(error.find("not a leaseguard journal"), std::string::npos);
}

TEST(ExitStatuses, RoundTripAndRejectGarbage) {
  testing::TempDir dir;
  ExitStatuses exits{{10, {3, std::nullopt}}, {11, {std::nullopt, 9}}};
  std::string error;
  ASSERT_TRUE(write_exit_statuses(dir / "x.exits", exits, error));
  ExitStatuses read;
  ASSERT_TRUE(read_exit_statuses(dir / "x.exits", read, error));
  EXPECT_EQ(read.at(10).code, 3);
  EXPECT_EQ(read.at(11).signal, 9);
  std::ofstream(dir / "bad.exits") << "10 code 3\nnonsense\n";
  EXPECT_FALSE(read_exit_statuses(dir / "bad.exits", read, error));
  EXPECT_NE(error.find(":2:"), std::string::npos);
}

}  // namespace
}  // namespace leaseguard::report
