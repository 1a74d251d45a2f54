// The journal: round trips, growth, damage, and a writer killed at random moments.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "journal_reader.h"
#include "journal_writer.h"
#include "test_support.h"

namespace leaseguard::journal {
namespace {

HeaderPayload make_header() {
  HeaderPayload header{};
  std::memcpy(header.magic, kFileMagic, sizeof header.magic);
  header.version = kVersion;
  header.slot_bytes = kSlotBytes;
  header.pid = 42;
  header.ppid = 1;
  header.start_monotonic_ns = 1000;
  return header;
}

AllocPayload make_alloc(uint64_t id) {
  AllocPayload alloc{};
  alloc.id = id;
  alloc.address = 0x7f0000000000ull + id * 256;
  alloc.bytes = id * 3;
  alloc.time_ns = 2000 + id;
  alloc.lease_id = 1;
  alloc.api = 2;
  return alloc;
}

struct Collector : JournalVisitor {
  std::vector<AllocPayload> allocs;
  std::vector<FreePayload> frees;
  std::vector<std::pair<uint32_t, std::vector<StackFrame>>> stacks;
  std::vector<std::string> lease_names;
  std::vector<JournalFullPayload> full;
  int headers = 0;
  void on_header(const HeaderPayload &) override { ++headers; }
  void on_alloc(const AllocPayload &alloc) override { allocs.push_back(alloc); }
  void on_free(const FreePayload &free_record) override { frees.push_back(free_record); }
  void on_stack(uint32_t id, const std::vector<StackFrame> &frames) override { stacks.emplace_back(id, frames); }
  void on_lease_begin(const LeaseBeginPayload &, std::string_view name) override { lease_names.emplace_back(name); }
  void on_journal_full(const JournalFullPayload &record) override { full.push_back(record); }
};

std::vector<unsigned char> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

// A header of a version this build cannot read says the versions it reads; a header whose
// slot size is wrong is damage, and says so (it once said "version 5 is not supported (reads
// 1 to 5)").
TEST(Journal, AnUnreadableHeaderSaysWhatIsWrongWithIt) {
  testing::TempDir dir;
  auto error_for = [&](HeaderPayload header) {
    std::string error;
    {
      JournalWriter writer;
      EXPECT_TRUE(writer.open(dir / "j.journal", header, error)) << error;
    }
    Collector collector;
    ReadStats stats;
    EXPECT_FALSE(read_journal(dir / "j.journal", collector, stats, error));
    std::filesystem::remove(dir / "j.journal");
    return error;
  };
  HeaderPayload future = make_header();
  future.version = kVersion + 1;
  const std::string path = dir / "j.journal";
  EXPECT_EQ(error_for(future), path + ": journal version " + std::to_string(kVersion + 1) +
                                   " is not supported (this leaseguard reads versions " +
                                   std::to_string(kOldestReadableVersion) + " to " + std::to_string(kVersion) + ")");
  HeaderPayload bad_slots = make_header();
  bad_slots.slot_bytes = kSlotBytes / 2;
  EXPECT_EQ(error_for(bad_slots), path + ": damaged journal: its header says slots of " +
                                      std::to_string(kSlotBytes / 2) + " bytes, and every version's are " +
                                      std::to_string(kSlotBytes));
}

// Each thread appends into a run of slots of its own: its records in its order, another
// thread's in a run after; a run given up (a new epoch, a record of the general path, the
// thread's end) leaves an Unused record over the rest of it, which the readers skip whole.
TEST(Journal, EachThreadWritesIntoARunOfItsOwnAndARunGivenUpIsSkippedWhole) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error)) << error;
  const uint64_t epoch = JournalWriter::make_epoch(0, 0);
  std::vector<uint64_t> slots;
  for (uint64_t id = 1; id <= 3; ++id)
    slots.push_back(writer.append_one_slot(RecordType::Alloc, make_alloc(id), epoch));
  std::thread([&] {
    slots.push_back(writer.append_one_slot(RecordType::Alloc, make_alloc(10), epoch));
    writer.give_up_run();  // its end: what is left of its run is Unused
  }).join();
  // A new epoch (a barrier raised): this thread's run is given up and a new one taken after
  // the other thread's.
  slots.push_back(writer.append_one_slot(RecordType::Alloc, make_alloc(4), JournalWriter::make_epoch(1, 0)));
  // In the old epoch's run's place: nothing. The free of the last allocation is placed in
  // its run (before the thread's next slot); the general path's record comes after all.
  EXPECT_EQ(writer.free_place(slots.back(), 1, [] { return uint64_t{0}; }), slots.back() + 1);
  // A tick later (another thread records too): a compact journal's free keeps the run's
  // place, any other is placed after everything handed out, and the run is given up.
  const auto a_tick_later = [] { return uint64_t{1} << kThreadRunTickShift; };
  EXPECT_EQ(writer.free_place(slots.back(), 1, a_tick_later, false), slots.back() + 1);
  EXPECT_EQ(writer.free_place(slots.back(), 1, a_tick_later), writer.next_slot());
  uint32_t payload = 7;
  ASSERT_TRUE(writer.append(RecordType::Free, &payload, sizeof payload));
  writer.give_up_run();

  EXPECT_EQ(slots[1], slots[0] + 1);
  EXPECT_EQ(slots[2], slots[0] + 2);
  EXPECT_EQ(slots[3], slots[0] + JournalWriter::kFirstRunSlots);  // the other thread's run
  EXPECT_GT(slots[4], slots[3]);
  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal(writer.path(), collector, stats, error)) << error;
  std::vector<uint64_t> ids;
  for (const AllocPayload &alloc : collector.allocs) ids.push_back(alloc.id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 10, 4}));
  // Every slot handed out holds a record or lies in an Unused one: the zeros read are the
  // file's unwritten end only.
  const uint64_t file_slots = std::filesystem::file_size(writer.path()) / kSlotBytes;
  EXPECT_EQ(stats.uncommitted_slots, file_slots - writer.next_slot()) << "every run given up is skipped whole";
  EXPECT_FALSE(stats.damaged());
}

// With the prefaulting thread mapping ahead, two writers append across several chunks and
// every record is there, whole, after the thread is stopped.
void expect_every_record_written_while_a_thread_maps_ahead(JournalWriter::PrefaultBy method) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error)) << error;
  writer.prefault_by(method);
  writer.start_prefaulting();
  constexpr uint64_t kPerThread = 400000;  // 2 x 25 MiB: past the first chunks
  auto write = [&](uint64_t first) {
    for (uint64_t id = first; id < first + kPerThread; ++id)
      ASSERT_NE(writer.append_one_slot(RecordType::Alloc, make_alloc(id)), JournalWriter::kNoSlot);
  };
  std::thread other(write, kPerThread + 1);
  write(1);
  other.join();
  writer.stop_prefaulting();
  writer.stop_prefaulting();  // idempotent
  EXPECT_EQ(writer.dropped(), 0u);

  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal(writer.path(), collector, stats, error)) << error;
  ASSERT_EQ(collector.allocs.size(), 2 * kPerThread);
  std::vector<bool> seen(2 * kPerThread + 1);
  for (const AllocPayload &alloc : collector.allocs) {
    ASSERT_LE(alloc.id, 2 * kPerThread);
    EXPECT_EQ(alloc.bytes, alloc.id * 3);
    seen[alloc.id] = true;
  }
  EXPECT_EQ(std::count(seen.begin() + 1, seen.end(), true), static_cast<long>(2 * kPerThread));
}

TEST(Journal, RecordsWrittenWhileAThreadMapsAheadAreAllThere) {
  expect_every_record_written_while_a_thread_maps_ahead(JournalWriter::PrefaultBy::Madvise);
}

// The path for kernels that refuse MADV_POPULATE_WRITE: each page's first word written with
// its own value, while the writers store records there.
TEST(Journal, RecordsWrittenWhileAThreadTouchesPagesAheadAreAllThere) {
  expect_every_record_written_while_a_thread_maps_ahead(JournalWriter::PrefaultBy::Touching);
}

// How many of the pages holding slots [first, end) of the journal at `path` are in the page
// cache: faulted in for writing by someone (a writer, or the prefaulting thread ahead of
// it). Read through a mapping of the test's own: residency is the file's, not a mapping's.
// (Counting the writer's page faults instead does not work where a fault maps a whole
// large folio, as here: such faults are not counted in getrusage at all.)
size_t resident_pages(const std::string &path, uint64_t first, uint64_t end) {
  const size_t page = 4096;
  const size_t from = first * kSlotBytes / page * page, to = (end * kSlotBytes + page - 1) / page * page;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  void *view = mmap(nullptr, to - from, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(from));
  ::close(fd);
  if (view == MAP_FAILED) return 0;
  std::vector<unsigned char> resident((to - from) / page);
  const bool known = mincore(view, to - from, resident.data()) == 0;
  munmap(view, to - from);
  return known ? static_cast<size_t>(
                     std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; }))
               : 0;
}

// Where the kernel refuses MADV_POPULATE_WRITE, the thread still faults in the pages ahead
// of the writers, which a writer would otherwise fault in inside the program's allocation
// calls: they are in the page cache before any writer reaches them. Waits for the thread
// by what it did, not by time.
TEST(Journal, TouchingFaultsInThePagesAheadOfTheWriters) {
  // Past the megabyte before which nothing is faulted in ahead; then as much again is. The
  // pages looked at are in a chunk of the file the writer has not touched: where a write
  // fault brings in a large folio (ext4, as here), pages near the writer's are resident
  // because of its own faults.
  constexpr uint64_t kFirst = 42000, kAhead = 12000;
  auto pages_ahead_resident = [](bool prefault) -> std::pair<size_t, size_t> {
    testing::TempDir dir;
    JournalWriter writer;
    std::string error;
    EXPECT_TRUE(writer.open(dir / "j.journal", make_header(), error)) << error;
    writer.prefault_by(JournalWriter::PrefaultBy::Touching);
    if (prefault) writer.start_prefaulting();
    uint64_t id = 1;
    for (; id <= kFirst; ++id) writer.append_one_slot(RecordType::Alloc, make_alloc(id));
    // Pages the writer has not reached (it stays a chunk's worth behind them).
    constexpr uint64_t kFrom = 2 * JournalWriter::kChunkSlots, kTo = kFrom + kAhead;
    static_assert(kFrom > kFirst + 60 && kTo < 2 * kFirst, "ahead of the writer, within what the thread faults in");
    const size_t pages = (kTo * kSlotBytes + 4095) / 4096 - kFrom * kSlotBytes / 4096;
    size_t resident = resident_pages(writer.path(), kFrom, kTo);
    // A request made while the thread works on an earlier one is folded into it, so it may
    // have last served one made before the last appends: one more append asks again, then
    // the test waits for the pages, a few times at most (the writer stays behind kFrom).
    for (int asks = 0; prefault && resident < pages && asks < 60; ++asks) {
      writer.append_one_slot(RecordType::Alloc, make_alloc(id++));
      for (int polls = 0; polls < 500 && (resident = resident_pages(writer.path(), kFrom, kTo)) < pages; ++polls)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    writer.stop_prefaulting();
    EXPECT_EQ(writer.dropped(), 0u);
    return {resident, pages};
  };
  const auto [without, pages] = pages_ahead_resident(false);
  EXPECT_EQ(without, 0u) << "nothing ahead of the writer is in the page cache before it writes there";
  const auto [with, also_pages] = pages_ahead_resident(true);
  EXPECT_EQ(with, also_pages) << "the thread faulted them in first";
}

TEST(Journal, RoundTripsEveryRecordShape) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error)) << error;
  for (uint64_t id = 1; id <= 10; ++id) {
    AllocPayload alloc = make_alloc(id);
    ASSERT_TRUE(writer.append(RecordType::Alloc, &alloc, sizeof alloc));
  }
  FreePayload free_record{};
  free_record.id = 3;
  writer.append(RecordType::Free, &free_record, sizeof free_record);
  // A multi-slot record: a 40-frame stack.
  std::vector<unsigned char> stack(sizeof(StackPayload) + 40 * sizeof(StackFrame));
  StackPayload stack_header{7, 40};
  std::memcpy(stack.data(), &stack_header, sizeof stack_header);
  for (uint32_t i = 0; i < 40; ++i) {
    StackFrame frame{i, i * 16, 0};
    std::memcpy(stack.data() + sizeof stack_header + i * sizeof frame, &frame, sizeof frame);
  }
  ASSERT_TRUE(writer.append(RecordType::Stack, stack.data(), stack.size()));
  std::string name(200, 'n');
  std::vector<unsigned char> lease(sizeof(LeaseBeginPayload) + name.size());
  LeaseBeginPayload begin{};
  begin.lease_id = 2;
  begin.name_bytes = static_cast<uint32_t>(name.size());
  std::memcpy(lease.data(), &begin, sizeof begin);
  std::memcpy(lease.data() + sizeof begin, name.data(), name.size());
  ASSERT_TRUE(writer.append(RecordType::LeaseBegin, lease.data(), lease.size()));
  // Too large for any record: refused and counted, nothing written.
  std::vector<unsigned char> huge(kMaxPayloadBytes + 1);
  EXPECT_FALSE(writer.append(RecordType::Stack, huge.data(), huge.size()));
  EXPECT_EQ(writer.dropped(), 1u);

  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal(writer.path(), collector, stats, error)) << error;
  EXPECT_EQ(collector.headers, 1);
  ASSERT_EQ(collector.allocs.size(), 10u);
  EXPECT_EQ(collector.allocs[4].id, 5u);
  EXPECT_EQ(collector.allocs[4].bytes, 15u);
  ASSERT_EQ(collector.frees.size(), 1u);
  ASSERT_EQ(collector.stacks.size(), 1u);
  EXPECT_EQ(collector.stacks[0].second.size(), 40u);
  EXPECT_EQ(collector.stacks[0].second[39].offset_low, 39u * 16);
  ASSERT_EQ(collector.lease_names.size(), 1u);
  EXPECT_EQ(collector.lease_names[0], name);
  EXPECT_FALSE(stats.damaged());
}

TEST(Journal, RefusesToReuseOrFollowALink) {
  testing::TempDir dir;
  std::string error;
  JournalWriter first;
  ASSERT_TRUE(first.open(dir / "j.journal", make_header(), error));
  JournalWriter second;
  EXPECT_FALSE(second.open(dir / "j.journal", make_header(), error));
  ASSERT_EQ(symlink("/tmp/elsewhere", (dir / "link.journal").c_str()), 0);
  JournalWriter third;
  EXPECT_FALSE(third.open(dir / "link.journal", make_header(), error));
}

TEST(Journal, GrowsAcrossChunks) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error));
  const uint64_t count = 70'000;  // > 4 chunks of 16384 slots
  for (uint64_t id = 1; id <= count; ++id) {
    AllocPayload alloc = make_alloc(id);
    ASSERT_TRUE(writer.append(RecordType::Alloc, &alloc, sizeof alloc));
  }
  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal(writer.path(), collector, stats, error));
  ASSERT_EQ(collector.allocs.size(), count);
  for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(collector.allocs[i].id, i + 1);
}

TEST(Journal, SkipsUncommittedAndCorruptSlotsAndKeepsTheRest) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error));
  for (uint64_t id = 1; id <= 5; ++id) {
    AllocPayload alloc = make_alloc(id);
    writer.append(RecordType::Alloc, &alloc, sizeof alloc);
  }
  std::vector<unsigned char> bytes = read_file(writer.path());
  // Slot 0 is the header; allocs are slots 1..5. Uncommit #2, corrupt #4's tag.
  std::memset(bytes.data() + 2 * kSlotBytes, 0, 4);
  bytes[4 * kSlotBytes + 3] = 0x12;
  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal_bytes(bytes.data(), 6 * kSlotBytes + 10, collector, stats, error));
  ASSERT_EQ(collector.allocs.size(), 3u);
  EXPECT_EQ(collector.allocs[0].id, 1u);
  EXPECT_EQ(collector.allocs[1].id, 3u);
  EXPECT_EQ(collector.allocs[2].id, 5u);
  EXPECT_EQ(stats.uncommitted_slots, 1u);
  EXPECT_EQ(stats.corrupt_slots, 1u);
  EXPECT_EQ(stats.truncated_bytes, 10u);
  EXPECT_TRUE(stats.damaged());
}

// Everything a reader hands its visitor, in order, with each record's place.
struct VisitLog : JournalVisitor {
  std::vector<std::string> lines;
  void note(const std::string &what) { lines.push_back(std::to_string(record_slot()) + " " + what); }
  void on_header(const HeaderPayload &header) override { note("header " + std::to_string(header.pid)); }
  void on_module(const ModuleInfo &module) override { note("module " + module.path + " " + module.build_id); }
  void on_stack(uint32_t id, const std::vector<StackFrame> &frames) override {
    note("stack " + std::to_string(id) + " " + std::to_string(frames.size()));
  }
  void on_alloc(const AllocPayload &alloc) override { note("alloc " + std::to_string(alloc.id)); }
  void on_lease_begin(const LeaseBeginPayload &, std::string_view name) override { note("lease " + std::string(name)); }
};

// A journal of records from one slot to the most a record takes, damaged here and there and
// cut off mid-slot, as a file.
std::string write_a_varied_damaged_journal(const testing::TempDir &dir) {
  const std::string path = dir / "varied.journal";
  std::mt19937 random(7);
  {
    JournalWriter writer;
    std::string error;
    EXPECT_TRUE(writer.open(path, make_header(), error)) << error;
    std::vector<unsigned char> buffer(kMaxPayloadBytes);
    for (uint64_t id = 1; id <= 3000; ++id) {
      AllocPayload alloc = make_alloc(id);
      writer.append(RecordType::Alloc, &alloc, sizeof alloc);
      if (id % 7 == 0) {  // one to five slots
        LeaseBeginPayload begin{};
        begin.name_bytes = static_cast<uint32_t>(random() % 257);
        std::memcpy(buffer.data(), &begin, sizeof begin);
        std::memset(buffer.data() + sizeof begin, 'a' + static_cast<int>(id % 26), begin.name_bytes);
        writer.append(RecordType::LeaseBegin, buffer.data(), sizeof begin + begin.name_bytes);
      }
      if (id % 97 == 0) {  // up to the most a record takes
        ModulePayload module{};
        const size_t bytes = sizeof module + random() % (kMaxPayloadBytes - sizeof module + 1);
        module.path_bytes = static_cast<uint32_t>(bytes - sizeof module);
        std::memcpy(buffer.data(), &module, sizeof module);
        std::memset(buffer.data() + sizeof module, 'p', module.path_bytes);
        writer.append(RecordType::Module, buffer.data(), bytes);
      }
    }
  }
  std::vector<unsigned char> bytes = read_file(path);
  const size_t slots = bytes.size() / kSlotBytes;
  for (int damage = 0; damage < 40; ++damage) {
    const size_t slot = 1 + random() % (slots - 1);
    unsigned char *tag = bytes.data() + slot * kSlotBytes;
    if (damage % 3 == 0) std::memset(tag, 0, 4);         // never committed
    else if (damage % 3 == 1) tag[3] = 0x12;             // not leaseguard's
    else tag[0] = static_cast<unsigned char>(random());  // a record that claims other lengths
  }
  bytes.resize(bytes.size() + 17, 0xEE);  // a partial slot at the end
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// The file is read a window at a time: records that straddle a window's end, damage on
// either side of it and the cut-off end read exactly as they do with the whole file in
// memory, whatever the window.
TEST(Journal, ReadingAWindowAtATimeVisitsExactlyWhatTheWholeFileDoes) {
  testing::TempDir dir;
  const std::string path = write_a_varied_damaged_journal(dir);
  std::vector<unsigned char> bytes = read_file(path);
  VisitLog whole;
  ReadStats whole_stats;
  std::string error;
  ASSERT_TRUE(read_journal_bytes(bytes.data(), bytes.size(), whole, whole_stats, error)) << error;
  ASSERT_GT(whole.lines.size(), 3000u);
  EXPECT_GT(whole_stats.corrupt_slots + whole_stats.malformed_records, 0u);
  EXPECT_GT(whole_stats.uncommitted_slots, 0u);
  EXPECT_EQ(whole_stats.truncated_bytes, 17u);
  for (size_t window : {size_t{0}, size_t{255}, size_t{256}, size_t{257}, size_t{300}, size_t{1000}, size_t{4099},
                        kDefaultReadWindowSlots}) {
    VisitLog windowed;
    ReadStats stats;
    ASSERT_TRUE(read_journal(path, windowed, stats, error, window)) << error;
    ASSERT_EQ(windowed.lines, whole.lines) << "window " << window;
    EXPECT_EQ(stats.records, whole_stats.records);
    EXPECT_EQ(stats.uncommitted_slots, whole_stats.uncommitted_slots);
    EXPECT_EQ(stats.corrupt_slots, whole_stats.corrupt_slots);
    EXPECT_EQ(stats.malformed_records, whole_stats.malformed_records);
    EXPECT_EQ(stats.unknown_records, whole_stats.unknown_records);
    EXPECT_EQ(stats.truncated_bytes, whole_stats.truncated_bytes);
  }
}

// A journal that shrinks while it is read (another process truncating it): the reader says
// so, after visiting everything still in the file.
TEST(Journal, AJournalThatShrinksWhileItIsReadIsAnErrorAfterWhatCameBefore) {
  testing::TempDir dir;
  const std::string path = dir / "j.journal";
  {
    JournalWriter writer;
    std::string error;
    ASSERT_TRUE(writer.open(path, make_header(), error)) << error;
    for (uint64_t id = 1; id <= 2000; ++id)
      ASSERT_NE(writer.append_one_slot(RecordType::Alloc, make_alloc(id)), JournalWriter::kNoSlot);
  }
  struct Truncating : Collector {
    std::string path;
    void on_alloc(const AllocPayload &alloc) override {
      Collector::on_alloc(alloc);
      if (alloc.id == 100) {
        EXPECT_EQ(truncate(path.c_str(), 500 * kSlotBytes), 0);
      }
    }
  } truncating;
  truncating.path = path;
  ReadStats stats;
  std::string error;
  EXPECT_FALSE(read_journal(path, truncating, stats, error, 256));
  EXPECT_EQ(error, path + ": cannot read: the file shrank");
  ASSERT_EQ(truncating.allocs.size(), 499u);  // every slot still in the file: the header, 499 allocations
  for (size_t i = 0; i < truncating.allocs.size(); ++i) EXPECT_EQ(truncating.allocs[i].id, i + 1);
}

TEST(Journal, RejectsWhatIsNotAJournal) {
  Collector collector;
  ReadStats stats;
  std::string error;
  std::vector<unsigned char> garbage(256, 0xAB);
  EXPECT_FALSE(read_journal_bytes(garbage.data(), garbage.size(), collector, stats, error));
  EXPECT_NE(error.find("not a leaseguard journal"), std::string::npos);
  EXPECT_FALSE(read_journal_bytes(garbage.data(), 0, collector, stats, error));
  EXPECT_FALSE(read_journal("/nonexistent/j.journal", collector, stats, error));
}

// A writer killed at a random instant: every record it finished is read back, whole, and
// at most the one record in flight is missing.
// Forks a writer that runs `write_forever` on a fresh journal in `dir` (it stores into
// `written` what it has committed), kills it at a random instant once it is writing, and
// returns the last value it stored.
template <typename WriteForever>
uint64_t kill_a_writer_at_a_random_moment(const testing::TempDir &dir, std::mt19937 &random,
                                          WriteForever write_forever) {
  auto *written = static_cast<std::atomic<uint64_t> *>(
      mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  EXPECT_NE(written, MAP_FAILED);
  if (written == MAP_FAILED) return 0;
  new (written) std::atomic<uint64_t>(0);
  pid_t child = fork();
  EXPECT_GE(child, 0);
  if (child == 0) {
    JournalWriter writer;
    std::string error;
    if (!writer.open(dir / "j.journal", make_header(), error)) _exit(1);
    write_forever(writer, *written);
  }
  while (written->load() == 0) usleep(100);
  usleep(random() % 20000);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  const uint64_t done = written->load();
  munmap(written, sizeof(std::atomic<uint64_t>));
  return done;
}

TEST(Journal, SurvivesSigkillAtRandomMoments) {
  std::mt19937 random(12345);
  for (int round = 0; round < 100; ++round) {
    testing::TempDir dir;
    const uint64_t done = kill_a_writer_at_a_random_moment(dir, random, [](JournalWriter &writer, auto &committed) {
      for (uint64_t id = 1;; ++id) {
        AllocPayload alloc = make_alloc(id);
        alloc.context = ~id;  // a check value the reader verifies
        writer.append(RecordType::Alloc, &alloc, sizeof alloc);
        committed.store(id, std::memory_order_release);
      }
    });
    Collector collector;
    ReadStats stats;
    std::string error;
    ASSERT_TRUE(read_journal(dir / "j.journal", collector, stats, error)) << error;
    ASSERT_GE(collector.allocs.size(), done);
    ASSERT_LE(collector.allocs.size(), done + 1);
    for (size_t i = 0; i < collector.allocs.size(); ++i) {
      ASSERT_EQ(collector.allocs[i].id, i + 1);
      ASSERT_EQ(collector.allocs[i].context, ~(i + 1));
    }
    EXPECT_FALSE(stats.damaged());
  }
}

// A compact journal writes a record over the last one (kHeaderCompact): never one that has
// another after it.
TEST(Journal, OnlyTheLastRecordIsWrittenOver) {
  testing::TempDir dir;
  JournalWriter writer;
  std::string error;
  ASSERT_TRUE(writer.open(dir / "j.journal", make_header(), error)) << error;
  const uint64_t first = writer.append_one_slot(RecordType::Alloc, make_alloc(1));
  const uint64_t second = writer.append_one_slot(RecordType::Alloc, make_alloc(2));
  EXPECT_FALSE(writer.replace_last_one_slot(first, RecordType::Alloc, make_alloc(3)));
  EXPECT_TRUE(writer.replace_last_one_slot(second, RecordType::Alloc, make_alloc(4)));
  writer.store_in_place<kFreedInPlaceOffset>(second, 77);
  EXPECT_EQ(writer.load_in_place(second, kFreedInPlaceOffset), 77u);

  Collector collector;
  ReadStats stats;
  ASSERT_TRUE(read_journal(writer.path(), collector, stats, error)) << error;
  ASSERT_EQ(collector.allocs.size(), 2u);
  EXPECT_EQ(collector.allocs[0].id, 1u);
  EXPECT_EQ(collector.allocs[1].id, 4u);
  EXPECT_EQ(collector.allocs[1].freed_in_place, 77u);
  EXPECT_FALSE(stats.damaged());
}

// A writer killed while it writes a record over the last one leaves either record whole, or
// the slot uncommitted: never a record made of both.
TEST(Journal, ARecordWrittenOverSurvivesSigkillWholeOrNotAtAll) {
  std::mt19937 random(54321);
  for (int round = 0; round < 50; ++round) {
    testing::TempDir dir;
    const uint64_t done = kill_a_writer_at_a_random_moment(dir, random, [](JournalWriter &writer, auto &written) {
      const uint64_t slot = writer.append_one_slot(RecordType::Alloc, make_alloc(1));
      for (uint64_t id = 2;; ++id) {
        AllocPayload alloc = make_alloc(id);
        alloc.context = ~id;  // check values the reader verifies, at both ends of the payload
        alloc.freed_in_place = static_cast<uint32_t>(id);
        writer.replace_last_one_slot(slot, RecordType::Alloc, alloc);
        written.store(id, std::memory_order_release);
      }
    });
    Collector collector;
    ReadStats stats;
    std::string error;
    ASSERT_TRUE(read_journal(dir / "j.journal", collector, stats, error)) << error;
    ASSERT_LE(collector.allocs.size(), 1u);
    if (!collector.allocs.empty()) {
      const AllocPayload &alloc = collector.allocs[0];
      ASSERT_GE(alloc.id, done);
      ASSERT_LE(alloc.id, done + 1);
      ASSERT_EQ(alloc.context, ~alloc.id);
      ASSERT_EQ(alloc.freed_in_place, static_cast<uint32_t>(alloc.id));
      ASSERT_EQ(alloc.address, make_alloc(alloc.id).address);
    }
    EXPECT_FALSE(stats.damaged());
  }
}

// A file system that cannot give the journal more blocks (full, or a tmpfs at its size
// limit) answers a store into a fresh page of a file mapping with SIGBUS. The writer must
// drop records instead, keep room for the records that end things, and the reader must read
// such a journal on such a file system. A tmpfs of 128 KiB, mounted in a mount namespace of
// a child's own (skipped where mounting is not allowed).
TEST(Journal, AFullFileSystemDropsRecordsInsteadOfKillingTheProgram) {
  testing::TempDir dir;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=128k,mode=0700") != 0)
      _exit(77);
    JournalWriter writer;
    std::string error;
    if (!writer.open(dir / "j.journal", make_header(), error)) _exit(1);
    uint64_t written = 0;
    for (uint64_t id = 1; id <= 100000; ++id)
      if (writer.append_one_slot(RecordType::Alloc, make_alloc(id)) != JournalWriter::kNoSlot) written = id;
    if (written == 0 || written == 100000 || writer.dropped() != 100000 - written) _exit(2);
    ProcessEndPayload end{};
    end.dropped_records = writer.dropped();
    if (!writer.append(RecordType::ProcessEnd, &end, sizeof end)) _exit(3);  // an ending still fits
    Collector collector;
    ReadStats stats;
    if (!read_journal(dir / "j.journal", collector, stats, error)) _exit(4);
    if (collector.allocs.size() != written || stats.damaged()) _exit(5);
    // The moment it filled up is in it, once, with why.
    if (collector.full.size() != 1 || collector.full[0].error != ENOSPC) _exit(7);
    for (size_t i = 0; i < collector.allocs.size(); ++i)
      if (collector.allocs[i].id != i + 1) _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace leaseguard::journal
