// The daemon's live-bytes reader, on a journal written slot by slot as a process writes one
// (journal_format.h): each look sees what was committed since, including what is stored into
// records already read (frees in place) and written over them (compact journals).
#include "live_bytes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "api_ids.h"
#include "journal_format.h"

namespace leaseguard::journal {
namespace {

using namespace journal;

// A journal file mapped shared, written as JournalWriter writes: payload first, tag last.
class JournalFile {
 public:
  explicit JournalFile(size_t slots) : slots_(slots) {
    char pattern[] = "/tmp/leaseguard-live-XXXXXX";
    fd_ = mkstemp(pattern);
    path_ = pattern;
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(slots * kSlotBytes)), 0);
    map_ = static_cast<unsigned char *>(mmap(nullptr, slots * kSlotBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    HeaderPayload header{};
    std::memcpy(header.magic, kFileMagic, sizeof header.magic);
    header.version = kVersion;
    header.slot_bytes = kSlotBytes;
    write(0, RecordType::Header, header);
  }
  ~JournalFile() {
    munmap(map_, slots_ * kSlotBytes);
    close(fd_);
    unlink(path_.c_str());
  }
  const std::string &path() const { return path_; }

  template <typename Payload>
  void write(uint64_t slot, RecordType type, const Payload &payload) {
    std::memcpy(map_ + slot * kSlotBytes + 4, &payload, sizeof payload);
    __atomic_store_n(reinterpret_cast<uint32_t *>(map_ + slot * kSlotBytes), make_tag(type, 1), __ATOMIC_RELEASE);
  }
  void alloc(uint64_t slot, uint64_t id, uint64_t bytes, int device = 0, Kind kind = Kind::Device,
             uint64_t context = 0x10) {
    AllocPayload payload{};
    payload.id = id;
    payload.address = 0x7000'0000 + id * 0x1000;
    payload.bytes = bytes;
    payload.context = context;
    payload.kind = static_cast<uint8_t>(kind);
    payload.device = static_cast<int8_t>(device);
    write(slot, RecordType::Alloc, payload);
  }
  void free(uint64_t slot, uint64_t id, uint8_t flags = 0) {
    FreePayload payload{};
    payload.id = id;
    payload.flags = flags;
    write(slot, RecordType::Free, payload);
  }
  void free_in_place(uint64_t alloc_slot, uint32_t slots_after) {
    __atomic_store_n(reinterpret_cast<uint32_t *>(map_ + alloc_slot * kSlotBytes + 4 + kFreedInPlaceOffset),
                     slots_after, __ATOMIC_RELEASE);
  }
  void clear(uint64_t slot) { std::memset(map_ + slot * kSlotBytes, 0, kSlotBytes); }

 private:
  size_t slots_;
  int fd_ = -1;
  std::string path_;
  unsigned char *map_ = nullptr;
};

uint64_t device_bytes(const LiveBytesReader &reader, int device) {
  const auto bytes = reader.live_bytes_per_device();
  auto found = bytes.find(device);
  return found == bytes.end() ? 0 : found->second;
}

TEST(LiveBytes, FollowsAllocationsAndFreesAsTheyAreCommitted) {
  JournalFile journal(4096);
  LiveBytesReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(journal.path(), getuid(), error)) << error;
  journal.alloc(1, 1, 4096);
  journal.alloc(2, 2, 8192, 1);
  journal.alloc(3, 3, 1 << 20, 0, Kind::Host);  // pinned host memory: not the device's
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 4096u);
  EXPECT_EQ(device_bytes(reader, 1), 8192u);
  journal.free(4, 1);
  journal.free_in_place(2, 3);  // stored into the allocation's own record
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 0u);
  EXPECT_EQ(device_bytes(reader, 1), 0u);
  EXPECT_EQ(reader.live_allocations(), 1u) << "the host allocation is live, not counted";
  journal.free(5, 99, kFreeUnknown);  // an unknown pointer frees nothing
  EXPECT_FALSE(reader.process_ended());
  ProcessEndPayload end{};
  journal.write(6, RecordType::ProcessEnd, end);
  reader.update();
  EXPECT_TRUE(reader.process_ended());
}

TEST(LiveBytes, ASlotStillBeingWrittenIsReadWhenItIsCommitted) {
  JournalFile journal(4096);
  LiveBytesReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(journal.path(), getuid(), error)) << error;
  // Slot 1 is taken by a thread that has not committed it yet; slot 2 frees what it allocates.
  journal.free(2, 7);
  journal.alloc(3, 8, 100);
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 100u);
  journal.alloc(1, 7, 5000);  // committed late: freed already (slot 2)
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 100u);
}

TEST(LiveBytes, AnAllocationWrittenOverTheLastRecordIsSeen) {
  JournalFile journal(4096);
  LiveBytesReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(journal.path(), getuid(), error)) << error;
  journal.alloc(1, 1, 64);
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 64u);
  // A compact journal: the allocation is freed in place, and the thread's next allocation
  // is written over its record (the last of the journal), twice between two looks.
  journal.free_in_place(1, 1);
  journal.clear(1);
  journal.alloc(1, 2, 128);
  journal.free_in_place(1, 1);
  journal.clear(1);
  journal.alloc(1, 3, 256);
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 256u);
  EXPECT_EQ(reader.live_allocations(), 1u);
}

TEST(LiveBytes, AContextsDestroyTakesItsAllocations) {
  JournalFile journal(4096);
  LiveBytesReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(journal.path(), getuid(), error)) << error;
  journal.alloc(1, 1, 10, 0, Kind::Device, 0xA);
  journal.alloc(2, 2, 20, 0, Kind::Device, 0xB);
  ContextDestroyPayload destroy{};
  destroy.context = 0xA;
  destroy.begun_at_slot = 3;
  journal.write(3, RecordType::ContextDestroy, destroy);
  journal.alloc(4, 3, 40, 0, Kind::Device, 0xA);  // a new context with the old handle
  reader.update();
  EXPECT_EQ(device_bytes(reader, 0), 60u);
}

TEST(LiveBytes, RefusesWhatIsNotAJournal) {
  LiveBytesReader reader;
  std::string error;
  EXPECT_FALSE(reader.open("/proc/self/status", getuid(), error));
  EXPECT_FALSE(reader.open("/nonexistent/journal", getuid(), error));
  JournalFile journal(16);
  EXPECT_FALSE(LiveBytesReader().open(journal.path(), getuid() + 1, error)) << "another user's file";
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace leaseguard::journal
