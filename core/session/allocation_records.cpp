// Where a live allocation's details are kept (see allocation_records.h for the contract).
//
// Why compact journals write over records: a loop that allocates and frees would otherwise
// add 64 bytes to the journal per allocation, each in a fresh cache line, and every 64 a
// fresh page for the kernel to zero; a service left running for days fills its journal's
// 268M slots. Written over, the record stays in the writer's cache and the file stays the
// size of what is live.
#include "allocation_records.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "event_clock.h"
#include "thread_id.h"
#include "tracker.h"

namespace leaseguard {

thread_local uint32_t detail::t_thread_id __attribute__((tls_model("initial-exec"))) = 0;

uint32_t detail::look_up_thread_id() noexcept {
  t_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_thread_id;
}

// The calling thread's last allocation record in a compact journal, and what it recycled
// since it last wrote a Recycled record.
struct AllocationRecords::LastRecord {
  uint64_t tracker_number;  // the tracker it belongs to; any other: nothing known
  uint64_t slot;
  uint32_t barrier;  // the tracker's barrier count when it was written
  uint64_t recycled;
  uint64_t recycled_bytes;
};

namespace {

pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_exit_key;
bool g_have_exit_key = false;

// Only the installed tracker lives as long as the process's threads; one a test made may be
// gone by the time a thread exits.
void write_recycled_at_thread_exit(void *) {
  if (Tracker *tracker = Tracker::instance()) tracker->on_thread_exit();
}

void make_exit_key() { g_have_exit_key = pthread_key_create(&g_exit_key, write_recycled_at_thread_exit) == 0; }

}  // namespace

// Initial-exec, as the core's other thread-local state (tracker.cpp says why).
static __thread AllocationRecords::LastRecord t_last_record __attribute__((tls_model("initial-exec")));

AllocationDetails AllocationRecords::details(const LiveRecord &record) const noexcept {
  if (record.in_journal()) {
    journal::AllocPayload alloc;
    if (!journal_.read_one_slot(record.details_at, alloc)) return AllocationDetails{};
    AllocationDetails details;
    details.id = alloc.id;
    details.bytes = alloc.bytes;
    details.time_ns = alloc.time_ns;
    details.context = alloc.context;
    details.device = alloc.device;  // NOLINT(bugprone-signed-char-misuse): signed; -1 is unknown
    details.kind = static_cast<Kind>(alloc.kind);
    return details;
  }
  return record.in_side_store() ? side_store_.get(record.details_at) : AllocationDetails{};
}

HandleRecord AllocationRecords::full(const LiveRecord &record) const noexcept {
  HandleRecord full;
  static_cast<LiveRecord &>(full) = record;
  static_cast<AllocationDetails &>(full) = details(record);
  return full;
}

uint32_t AllocationRecords::keep_in_side_store(const journal::AllocPayload &alloc, int32_t device) noexcept {
  AllocationDetails details;
  details.id = alloc.id;
  details.bytes = alloc.bytes;
  details.time_ns = alloc.time_ns;
  details.context = alloc.context;
  details.device = static_cast<int16_t>(device >= INT16_MIN && device <= INT16_MAX ? device : -1);
  details.kind = static_cast<Kind>(alloc.kind);
  return side_store_.put(details);
}

void AllocationRecords::note_thread_exit() noexcept {
  t_exit_noted = true;
  pthread_once(&g_exit_key_once, make_exit_key);
  if (g_have_exit_key) pthread_setspecific(g_exit_key, &t_exit_noted);  // any non-null value
}

uint64_t AllocationRecords::write_compact(const journal::AllocPayload &alloc, uint32_t barriers,
                                          uint64_t epoch) noexcept {
  LastRecord &last = t_last_record;
  if (last.tracker_number != tracker_number_)
    last = LastRecord{tracker_number_, journal::JournalWriter::kNoSlot, 0, 0, 0};
  uint64_t bytes = 0;
  // The thread's last record, if the thread wrote nothing after it (the last of its run) and
  // its allocation was freed in place, is written over.
  if (last.slot != journal::JournalWriter::kNoSlot && last.barrier == barriers) {
    if (journal_.replace_last_if_marked(last.slot, journal::kFreedInPlaceOffset, offsetof(journal::AllocPayload, bytes),
                                        bytes, journal::RecordType::Alloc, alloc, epoch)) {
      last.recycled_bytes += bytes;
      if (++last.recycled >= journal::kRecycledFlushEvery) write_recycled(last);
      return last.slot;
    }
  }
  if (last.recycled != 0) write_recycled(last);
  const uint64_t slot = journal_.append_one_slot(journal::RecordType::Alloc, alloc, epoch);
  last.slot = slot < LiveRecord::kInSideStoreBit ? slot : journal::JournalWriter::kNoSlot;
  last.barrier = barriers;
  return slot;
}

void AllocationRecords::write_recycled(LastRecord &last) noexcept {
  journal::RecycledPayload recycled{};
  recycled.allocations = last.recycled;
  recycled.bytes = last.recycled_bytes;
  recycled.time_ns = event_clock_ns();
  recycled.thread = this_thread_id();
  journal_.append(journal::RecordType::Recycled, &recycled, sizeof recycled);
  last.recycled = 0;
  last.recycled_bytes = 0;
}

void AllocationRecords::write_recycled_counts() noexcept {
  LastRecord &last = t_last_record;
  if (last.tracker_number == tracker_number_ && last.recycled != 0) write_recycled(last);
}

}  // namespace leaseguard
