// A compact journal (LEASEGUARD_JOURNAL=compact; journal::kHeaderCompact): a thread writes
// its allocation over its last allocation record when that allocation was freed in place,
// nothing was appended after it, and no barrier was raised since (tracker.h). The replay applies a free in
// place before the next record that depends on what is live (a lease end, a context or pool
// destroy), so the record written over says nothing a leak report needs; what it said is
// counted in the thread's next Recycled record.
//
// Why: a loop that allocates and frees would otherwise add 64 bytes to the journal per
// allocation, each in a fresh cache line, and every 64 a fresh page for the kernel to zero;
// a service left running for days fills its journal's 268M slots. Written over, the record
// stays in the writer's cache and the file stays the size of what is live.
#include <pthread.h>

#include <cstddef>

#include "tracker.h"

namespace leaseguard {

// The calling thread's last allocation record, and what it recycled since it last wrote a
// Recycled record.
struct LastAllocRecord {
  uint64_t tracker_number;  // the tracker it belongs to (Tracker::instance_number_); any other: nothing known
  uint64_t slot;
  uint32_t barrier;  // the tracker's barrier count when it was written
  bool exit_key_set;  // this thread's value of the thread-exit key is set: it writes its counts as it exits
  uint64_t recycled;
  uint64_t recycled_bytes;
};

namespace {

// Initial-exec, as the core's other thread-local state (tracker.cpp says why).
__thread LastAllocRecord t_last_alloc __attribute__((tls_model("initial-exec")));

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

uint64_t Tracker::write_alloc_record_compact(const journal::AllocPayload &alloc, uint32_t barrier) noexcept {
  LastAllocRecord &last = t_last_alloc;
  if (last.tracker_number != instance_number_) last = LastAllocRecord{instance_number_, journal::JournalWriter::kNoSlot, 0, false, 0, 0};
  if (last.slot != journal::JournalWriter::kNoSlot && last.barrier == barrier &&
      journal_.load_in_place(last.slot, journal::kFreedInPlaceOffset) != 0) {
    const auto bytes = journal_.read_field<uint64_t>(last.slot, offsetof(journal::AllocPayload, bytes));
    if (journal_.replace_last_one_slot(last.slot, journal::RecordType::Alloc, alloc)) {
      last.recycled_bytes += bytes;
      if (++last.recycled >= journal::kRecycledFlushEvery) write_recycled(last);
      if (!last.exit_key_set) {
        last.exit_key_set = true;
        pthread_once(&g_exit_key_once, make_exit_key);
        if (g_have_exit_key) pthread_setspecific(g_exit_key, this);  // any non-null value
      }
      return last.slot;
    }
  }
  if (last.recycled != 0) write_recycled(last);
  const uint64_t slot = journal_.append_one_slot(journal::RecordType::Alloc, alloc);
  last.slot = slot < LiveRecord::kInSideStoreBit ? slot : journal::JournalWriter::kNoSlot;
  last.barrier = barrier;
  return slot;
}

void Tracker::write_recycled(LastAllocRecord &last) noexcept {
  journal::RecycledPayload recycled{};
  recycled.allocations = last.recycled;
  recycled.bytes = last.recycled_bytes;
  recycled.time_ns = event_clock_ns();
  recycled.thread = this_thread_id();
  journal_.append(journal::RecordType::Recycled, &recycled, sizeof recycled);
  last.recycled = 0;
  last.recycled_bytes = 0;
}

void Tracker::on_thread_exit() noexcept {
  LastAllocRecord &last = t_last_alloc;
  if (last.tracker_number == instance_number_ && last.recycled != 0 && journal_state_.load(std::memory_order_acquire) == 1)
    write_recycled(last);
}

}  // namespace leaseguard
