// Replay rules of journal_replay.cpp on hand-written journals: a crash, unknown frees,
// damaged input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>

#include "journal_writer.h"
#include "json_value.h"
#include "renderers.h"
#include "journal_replay.h"
#include "test_support.h"

namespace leaseguard::report {
namespace {

class JournalBuilder {
 public:
  explicit JournalBuilder(const std::string &path, uint32_t version = journal::kVersion, uint32_t flags = 0,
                          uint32_t event_time_resolution_ns = 0) {
    journal::HeaderPayload header{};
    std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
    header.version = version;
    header.flags = flags;
    header.event_time_resolution_ns = event_time_resolution_ns;
    header.slot_bytes = journal::kSlotBytes;
    header.pid = 77;
    header.start_monotonic_ns = 1'000'000'000;
    std::string error;
    EXPECT_TRUE(writer_.open(path, header, error)) << error;
    lease_begin(1, "process");
  }
  void lease_begin(uint32_t id, const std::string &name, uint64_t time_ms = 0) {
    std::vector<unsigned char> payload(sizeof(journal::LeaseBeginPayload) + name.size());
    journal::LeaseBeginPayload begin{};
    begin.lease_id = id;
    begin.name_bytes = static_cast<uint32_t>(name.size());
    begin.time_ns = 1'000'000'000 + time_ms * 1'000'000;
    std::memcpy(payload.data(), &begin, sizeof begin);
    std::memcpy(payload.data() + sizeof begin, name.data(), name.size());
    writer_.append(journal::RecordType::LeaseBegin, payload.data(), payload.size());
  }
  // freed_after: the free written into the record in place (0: none), so many slots after
  // the record's (from version 5) or microseconds after its time (before).
  void alloc(uint64_t id, uint64_t bytes, uint32_t lease = 1, uint64_t time_ms = 0, uint32_t freed_after = 0,
             uint64_t context = 0) {
    journal::AllocPayload alloc{};
    alloc.context = context;
    if (freed_after != 0)
      alloc.freed_in_place = static_cast<uint32_t>(Api::cuMemFree_v2) << journal::kFreedInPlaceApiShift | freed_after;
    alloc.id = id;
    alloc.address = id * 0x1000;
    alloc.bytes = bytes;
    alloc.lease_id = lease;
    alloc.api = static_cast<uint16_t>(Api::cuMemAlloc_v2);
    alloc.time_ns = 1'000'000'000 + time_ms * 1'000'000;
    writer_.append(journal::RecordType::Alloc, &alloc, sizeof alloc);
  }
  void module(uint32_t id, uint64_t base, const std::string &path) {
    journal::ModulePayload module{};
    module.module_id = id;
    module.base = base;
    module.path_bytes = static_cast<uint32_t>(path.size());
    std::vector<unsigned char> payload(sizeof module + path.size());
    std::memcpy(payload.data(), &module, sizeof module);
    std::memcpy(payload.data() + sizeof module, path.data(), path.size());
    writer_.append(journal::RecordType::Module, payload.data(), payload.size());
  }
  // Frames as (module id, offset), innermost first.
  void stack(uint32_t id, const std::vector<std::pair<uint32_t, uint64_t>> &frames) {
    journal::StackPayload stack{id, static_cast<uint32_t>(frames.size())};
    std::vector<unsigned char> payload(sizeof stack + frames.size() * sizeof(journal::StackFrame));
    std::memcpy(payload.data(), &stack, sizeof stack);
    for (size_t i = 0; i < frames.size(); ++i) {
      journal::StackFrame frame{frames[i].first, static_cast<uint32_t>(frames[i].second),
                                static_cast<uint32_t>(frames[i].second >> 32)};
      std::memcpy(payload.data() + sizeof stack + i * sizeof frame, &frame, sizeof frame);
    }
    writer_.append(journal::RecordType::Stack, payload.data(), payload.size());
  }
  void free(uint64_t id, uint8_t flags = 0) {
    journal::FreePayload free_record{};
    free_record.id = id;
    free_record.flags = flags;
    writer_.append(journal::RecordType::Free, &free_record, sizeof free_record);
  }
  void raw_free(const journal::FreePayload &free_record) {
    writer_.append(journal::RecordType::Free, &free_record, sizeof free_record);
  }
  void lease_end(uint32_t id, EndedBy by, uint64_t time_ms) {
    journal::LeaseEndPayload end{};
    end.lease_id = id;
    end.ended_by = static_cast<uint8_t>(by);
    end.time_ns = 1'000'000'000 + time_ms * 1'000'000;
    writer_.append(journal::RecordType::LeaseEnd, &end, sizeof end);
  }
  // begun_at_slot 0: as journals before version 3 were written.
  void context_destroy(uint64_t context, uint64_t begun_at_slot) {
    journal::ContextDestroyPayload destroy{};
    destroy.context = context;
    destroy.time_ns = 1'500'000'000;
    destroy.api = static_cast<uint16_t>(Api::cuCtxDestroy_v2);
    destroy.begun_at_slot = begun_at_slot;
    writer_.append(journal::RecordType::ContextDestroy, &destroy, sizeof destroy);
  }
  uint64_t next_slot() const { return writer_.next_slot(); }
  void process_end() {
    journal::ProcessEndPayload end{};
    end.time_ns = 2'000'000'000;
    writer_.append(journal::RecordType::ProcessEnd, &end, sizeof end);
  }
  const std::string &path() const { return writer_.path(); }
  // The writer goes without an end record, as a killed process's: while it holds its
  // journal, the journal is a running process's (writer_liveness.h).
  void die() { writer_.abandon(); }

 private:
  journal::JournalWriter writer_;
};

TEST(Replay, AProcessThatDiedReportsItsLiveAllocationsAsCrash) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  journal.alloc(1, 100, 1, 10);
  journal.alloc(2, 200);
  journal.free(2);
  const std::string path = journal.path();
  ProcessReport running;
  std::string error;
  ASSERT_TRUE(load_journal(path, running, error));
  EXPECT_TRUE(running.running);  // the writer still holds it: nothing has ended
  EXPECT_TRUE(running.leases.empty());
  EXPECT_EQ(running.live_allocations, 1u);
  EXPECT_EQ(running.live_bytes, 100u);
  journal.die();
  ProcessReport process;
  ASSERT_TRUE(load_journal(path, process, error));
  EXPECT_FALSE(process.running);
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
  journal.free(1);                         // late: after its lease expired
  journal.free(0, journal::kFreeUnknown);  // never allocated
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
  EXPECT_NE(
      text.find("Leak of 5200 byte(s) in 3 allocation(s) [cuMemAlloc_v2, device memory, device 0] allocated from:"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("exited with code 0"), std::string::npos);
  EXPECT_NE(text.find("SUMMARY: leaseguard: 5200 byte(s) leaked in 3 allocation(s)."), std::string::npos);
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// The HTML page carries its data in a script element, written a piece at a time: names the
// program chose (here leases named to close it) must not end it, in whichever piece they land.
TEST(Replay, TheHtmlPagesDataCannotEndItsScript) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  const std::string hostile = "</script><script>alert(1)</script><";
  constexpr uint32_t kLeases = 2000;  // a few hundred kilobytes of data: many pieces
  for (uint32_t id = 2; id < 2 + kLeases; ++id) {
    journal.lease_begin(id, hostile + std::to_string(id));
    journal.alloc(id, 64, id);
    journal.lease_end(id, EndedBy::End, 1);
  }
  journal.process_end();
  Report report;
  std::string error;
  ASSERT_TRUE(load_report({journal.path()}, {{77, ExitStatus{0, std::nullopt}}}, report, error));
  size_t pieces = 0;
  std::string page;
  render_html(report, [&](std::string_view piece) {
    ++pieces;
    page.append(piece);
  });
  EXPECT_GT(pieces, 3u);
  EXPECT_GT(page.size(), size_t{4} * kSinkPieceBytes);
  const size_t closings = occurrences(render_html(Report{}), "</script");
  EXPECT_EQ(occurrences(page, "</script"), closings);
  // Each name twice: its lease's timeline and its ending.
  EXPECT_EQ(occurrences(page, "<\\/script><script>alert(1)<\\/script><"), 2 * kLeases);
  // And the data still says what it did: read as the page reads it (the script's text, up
  // to where it ends, parsed as JSON), every lease keeps its name.
  const std::string data_begins = "id=\"leaseguard-data\">";
  const size_t begin = page.find(data_begins) + data_begins.size();
  const size_t end = page.find("</script", begin);
  ASSERT_NE(end, std::string::npos);
  JsonValue data;
  ASSERT_TRUE(JsonValue::parse(std::string_view(page).substr(begin, end - begin), data, error)) << error;
  std::set<std::string> names;
  for (const JsonValue &ending : data["processes"][0]["leases"].items()) names.insert(ending["name"].as_string());
  for (uint32_t id = 2; id < 2 + kLeases; ++id) EXPECT_EQ(names.count(hostile + std::to_string(id)), 1u) << id;
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

void expect_points(const ProcessReport &process, const std::vector<std::pair<double, uint64_t>> &expected) {
  ASSERT_EQ(process.timelines.size(), 1u);
  const auto &points = process.timelines[0].points;
  ASSERT_GE(points.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(points[i].first, expected[i].first) << i;
    EXPECT_EQ(points[i].second, expected[i].second) << i;
  }
}

TEST(Replay, FreesInPlaceCountWhereTheyHappenedForLiveBytesAndPeaks) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  // Slots: the lease's begin 1, A 2, B 3, C 4, the process's end 5. A (100 bytes at 0 ms)
  // was freed before the end, B (50 bytes at 6 ms) before C, C (30 bytes at 8 ms) is live.
  // In order: A, B, B freed, C, A freed, so the peak is 150 bytes at 6 ms, and at 8 ms 130
  // bytes are live. A free is plotted at the time of the record it came before.
  journal.alloc(1, 100, 1, 0, 3);
  journal.alloc(2, 50, 1, 6, 1);
  journal.alloc(3, 30, 1, 8);
  journal.process_end();
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error));
  EXPECT_EQ(process.allocations, 3u);
  EXPECT_EQ(process.frees, 2u);
  ASSERT_EQ(process.leases.size(), 1u);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);  // C
  EXPECT_EQ(process.leases[0].leaks[0].bytes, 30u);
  EXPECT_EQ(process.leases[0].peak_bytes, 150u);
  expect_points(process, {{0, 100}, {6, 150}, {8, 130}, {1000, 30}});
}

// Allocation times have the event clock's tick for their grain, so an allocation may read
// earlier than the record journaled before it (here its lease's exact beginning): it counts
// from that record's time, for its timeline point and its age alike.
TEST(Replay, AnAllocationTimedBeforeTheRecordBeforeItCountsFromThatRecord) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal", journal::kVersion, 0, 4'000'000);
  journal.lease_begin(2, "step", 10);
  journal.alloc(1, 100, 2, 8);  // in the tick before the lease began
  journal.lease_end(2, EndedBy::End, 20);
  journal.process_end();
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error));
  EXPECT_DOUBLE_EQ(process.event_time_resolution_ms, 4.0);
  const LeaseEnding *step = nullptr;
  for (const LeaseEnding &ending : process.leases)
    if (ending.id == 2) step = &ending;
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->leaks.size(), 1u);
  EXPECT_EQ(step->leaks[0].age_ms, 10u);
  const Timeline *timeline = nullptr;
  for (const Timeline &candidate : process.timelines)
    if (candidate.lease_id == 2) timeline = &candidate;
  ASSERT_NE(timeline, nullptr);
  ASSERT_FALSE(timeline->points.empty());
  EXPECT_DOUBLE_EQ(timeline->points.front().first, 10.0);
}

// Stacks share their frames: the report keeps each distinct frame once (a module and an
// offset), however many stacks name it, and each stack reads back as recorded. A module id
// recorded again (another library where the first was) makes its frames new ones.
TEST(Replay, StacksShareEachDistinctFrame) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal");
  journal.module(0, 0x400000, "/opt/app/bin/app");
  journal.module(1, 0x7f0000000000, "/opt/app/lib/libwork.so");
  constexpr uint32_t kStacks = 64;
  for (uint32_t id = 1; id <= kStacks; ++id) {
    std::vector<std::pair<uint32_t, uint64_t>> frames;
    for (uint32_t level = 0; level < 6; ++level)
      frames.emplace_back(level % 2, 0x100 * level + 0x10 * (id >> level & 1));
    frames.emplace_back(journal::kNoModule, 0x1234);
    journal.stack(id, frames);
  }
  journal.module(1, 0x7f1000000000, "/opt/app/lib/libother.so");
  journal.stack(kStacks + 1, {{1, 0x100}});
  journal.process_end();
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error)) << error;
  ASSERT_EQ(process.stacks.size(), kStacks + 1);
  EXPECT_EQ(process.frames.size(), 6u * 2 + 1 + 1);  // two offsets a level, the module-less frame, libother's
  for (uint32_t id = 1; id <= kStacks; ++id) {
    const StackView stack = process.stack(id);
    ASSERT_EQ(stack.size(), 7u);
    for (uint32_t level = 0; level < 6; ++level) {
      EXPECT_EQ(stack[level].module, level % 2 == 0 ? "/opt/app/bin/app" : "/opt/app/lib/libwork.so");
      EXPECT_EQ(stack[level].offset, 0x100u * level + 0x10 * (id >> level & 1));
    }
    EXPECT_EQ(stack[6].module, "");
    EXPECT_EQ(stack[6].address, 0x1234u);
  }
  const StackView other = process.stack(kStacks + 1);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].module, "/opt/app/lib/libother.so");
  EXPECT_EQ(other[0].address, 0x7f1000000100u);
}

// A compact journal's record may have been written over an earlier one in the journal's last
// slot after frees that name the slot after it: those come before it. So A's free, which
// came before the slot after B's, counts before B there, and after it in a full journal.
TEST(Replay, ACompactJournalAppliesFreesNamingTheNextSlotFirst) {
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact);
    testing::TempDir dir;
    JournalBuilder journal(dir / "j.journal", journal::kVersion, compact ? journal::kHeaderCompact : 0);
    journal.alloc(1, 100, 1, 0, 2);  // slot 2, freed before slot 4
    journal.alloc(2, 50, 1, 1);      // slot 3
    journal.process_end();
    ProcessReport process;
    std::string error;
    ASSERT_TRUE(load_journal(journal.path(), process, error));
    ASSERT_EQ(process.leases.size(), 1u);
    EXPECT_EQ(process.leases[0].peak_bytes, compact ? 100u : 150u);
  }
}

// Before version 5 a free in place gave its time: it is applied in time order.
TEST(Replay, FreesInPlaceOfVersion4JournalsCountInTimeOrder) {
  testing::TempDir dir;
  JournalBuilder journal(dir / "j.journal", 4);
  // A (100 bytes at 0 ms, freed at 9 ms), B (50 bytes at 6 ms, freed at 7 ms), C (30 bytes
  // at 8 ms, live). In time: A, B, B freed, C, A freed.
  journal.alloc(1, 100, 1, 0, 9000);
  journal.alloc(2, 50, 1, 6, 1000);
  journal.alloc(3, 30, 1, 8);
  journal.process_end();
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(journal.path(), process, error));
  EXPECT_EQ(process.frees, 2u);
  ASSERT_EQ(process.leases.size(), 1u);
  ASSERT_EQ(process.leases[0].leaks.size(), 1u);
  EXPECT_EQ(process.leases[0].peak_bytes, 150u);
  expect_points(process, {{0, 100}, {6, 150}, {7, 100}, {8, 130}, {9, 30}});
}

TEST(Replay, AFreeInPlaceIsRememberedForDoubleFrees) {
  for (const uint32_t version : {4u, journal::kVersion}) {
    SCOPED_TRACE(version);
    testing::TempDir dir;
    JournalBuilder journal(dir / "j.journal", version);
    // Version 5: freed before the next record, B's, at 1 ms. Version 4: freed at 0.5 ms.
    journal.alloc(1, 100, 1, 0, version == 4 ? 500 : 1);
    journal.alloc(2, 10, 1, 1);
    journal::FreePayload twice{};
    twice.address = 0x1000;
    twice.api = static_cast<uint16_t>(Api::cuMemFree_v2);
    twice.flags = journal::kFreeUnknown;
    twice.time_ns = 1'002'000'000;
    journal.raw_free(twice);
    journal.process_end();
    ProcessReport process;
    std::string error;
    ASSERT_TRUE(load_journal(journal.path(), process, error));
    ASSERT_EQ(process.double_frees.size(), 1u);
    EXPECT_DOUBLE_EQ(process.double_frees[0].first_freed_ms, version == 4 ? 0.5 : 1.0);
    EXPECT_DOUBLE_EQ(process.double_frees[0].time_ms, 2.0);
    ASSERT_EQ(process.leases[0].leaks.size(), 1u);  // B
    EXPECT_EQ(process.leases[0].leaks[0].bytes, 10u);
  }
}

// An allocation recorded after a context destroy began is in a new context that was given
// the destroyed one's handle: it stays live. Version 2 journals do not say where the destroy
// began, and every earlier allocation of the context goes with it, as they were read.
TEST(Replay, AContextDestroyTakesOnlyWhatWasRecordedBeforeItBegan) {
  for (const uint32_t version : {2u, journal::kVersion}) {
    SCOPED_TRACE(version);
    testing::TempDir dir;
    std::string path;
    {
      JournalBuilder journal(dir / "j.journal", version);
      journal.alloc(1, 100, 1, 0, 0, 0xAAA);
      const uint64_t begun = version == 2 ? 0 : journal.next_slot();
      journal.alloc(2, 200, 1, 0, 0, 0xAAA);
      journal.context_destroy(0xAAA, begun);
      journal.process_end();
      path = journal.path();
    }
    ProcessReport process;
    std::string error;
    ASSERT_TRUE(load_journal(path, process, error)) << error;
    ASSERT_EQ(process.leases.size(), 2u);
    EXPECT_EQ(process.leases[0].ended_by, EndedBy::ContextDestroy);
    EXPECT_EQ(process.leases[0].leaks.size(), version == 2 ? 2u : 1u);
    EXPECT_EQ(process.leases[1].ended_by, EndedBy::Exit);
    EXPECT_EQ(process.leases[1].leaks.size(), version == 2 ? 0u : 1u);
  }
}

// What the process ended with is reported per lease, innermost first; a free journaled
// after that (a static destructor's, or a damaged journal's) finds the leak where it was put.
TEST(Replay, AFreeAfterTheProcessEndedFindsItsLeakInItsOwnLease) {
  testing::TempDir dir;
  std::string path;
  {
    JournalBuilder journal(dir / "j.journal");
    journal.lease_begin(2, "inner");  // still open at the end, with nothing of its own
    journal.alloc(1, 100, 1, 0);
    journal.alloc(2, 200, 1, 0);
    journal.process_end();
    journal.free(1);
    journal.free(2, journal::kFreeReclaimed);
    path = journal.path();
  }
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(path, process, error)) << error;
  ASSERT_EQ(process.leases.size(), 2u);
  EXPECT_EQ(process.leases[0].name, "inner");
  EXPECT_TRUE(process.leases[0].leaks.empty());
  EXPECT_TRUE(process.leases[0].late_frees.empty());
  EXPECT_EQ(process.leases[1].name, "process");
  ASSERT_EQ(process.leases[1].leaks.size(), 2u);
  EXPECT_EQ(process.leases[1].late_frees.size(), 1u);
  EXPECT_TRUE(process.leases[1].leaks[1].reclaimed);
}

TEST(Replay, ReadsVersionOneJournals) {
  testing::TempDir dir;
  std::string path;
  {
    JournalBuilder journal(dir / "j.journal", 1);
    journal.alloc(1, 100, 1, 0);
    journal.process_end();
    path = journal.path();
  }
  ProcessReport process;
  std::string error;
  ASSERT_TRUE(load_journal(path, process, error)) << error;
  ASSERT_EQ(process.leases.size(), 1u);
  EXPECT_EQ(process.leases[0].leaks.size(), 1u);
}

}  // namespace
}  // namespace leaseguard::report
