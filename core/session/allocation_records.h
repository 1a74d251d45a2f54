// The journal's second role: where a live allocation's details are kept.
//
// The journal is first a log: every record is appended, committed by storing its first
// slot's tag last, and never moved (journal_format.h). It is also where the tracker keeps
// what its live table does not (an allocation's id, size, time, context, device and kind:
// AllocationDetails), read back from the allocation's own record when a lease ends or a
// context is destroyed, instead of held twice. This part is the only one that writes into a
// committed record or reads one back; its contract:
//
//   1. Frees stored in place. The free of an allocation is stored into its Alloc record's
//      `freed_in_place` word (4 bytes, 4-aligned, in the record's first slot) by one atomic
//      store, once, and only while no barrier has been raised since the allocation was
//      recorded (Tracker::raise_barrier: a lease end, a context or pool destroy) and the free
//      came fewer than 2^25 slots after it, at the freeing thread's place in its run of
//      slots (JournalWriter::free_place). The replay applies it at the place it names,
//      before the next barrier record, where a record of its own would have put it. A
//      reader (or a process killed at any instruction) sees the word zero or whole: the
//      allocation live or freed, never a torn record.
//   2. Compact journals (LEASEGUARD_JOURNAL=compact) write over a record. A thread's last
//      Alloc record, once its allocation was freed in place (1), with nothing appended
//      after it by that thread (it is the last of the thread's run) and no barrier raised
//      since, is written over by the same thread's next
//      allocation: tag cleared, payload written, tag set (JournalWriter::
//      replace_last_if_marked). Killed in between, the slot is uncommitted: the old
//      allocation and its free are gone, which the replay could not tell from their being
//      recycled, and the new allocation was not yet recorded (its hook had not returned).
//      What is written over is counted in the thread's next Recycled record.
//   3. Reading back. The details of a live allocation are read from its record, which only
//      (1) changes (in a word the details do not include) and (2) replaces (only once the
//      allocation is freed, so never while it is read). Allocations the journal could not
//      take (it was closed or full) keep their details in the side store (side_store.h).
//
// Every other record is appended and never written again.
#pragma once

#include <cstddef>
#include <cstdint>

#include "event_clock.h"
#include "handle_record.h"
#include "journal_writer.h"
#include "lg_assert.h"
#include "options.h"
#include "side_store.h"

namespace leaseguard {

class AllocationRecords {
 public:
  AllocationRecords(journal::JournalWriter &journal, JournalMode mode, uint64_t tracker_number) noexcept
      : journal_(journal), mode_(mode), tracker_number_(tracker_number) {}

  // Records `alloc` (its device as the program said it: the journal keeps one byte of it):
  // its record appended (compact: written over the thread's last one, where 2 allows), or,
  // if the journal cannot take it, its details kept in the side store. Returns where the
  // details are (LiveRecord::details_at). `barriers`: the tracker's barrier count now.
  __attribute__((always_inline)) uint32_t write(const journal::AllocPayload &alloc, int32_t device, uint32_t barriers,
                                                bool journaling) noexcept {
    if (journaling) {
      if (__builtin_expect(!t_exit_noted, false)) note_thread_exit();
      const uint64_t epoch = journal::JournalWriter::make_epoch(barriers, alloc.time_ns);
      const uint64_t slot = mode_ == JournalMode::Compact
                                ? write_compact(alloc, barriers, epoch)
                                : journal_.append_one_slot(journal::RecordType::Alloc, alloc, epoch);
      // A journal holds fewer slots than the bit that marks the side store.
      LG_ASSERT(slot == journal::JournalWriter::kNoSlot || slot < LiveRecord::kInSideStoreBit);
      if (slot < LiveRecord::kInSideStoreBit) return static_cast<uint32_t>(slot);
    }
    return keep_in_side_store(alloc, device);
  }

  // Stores the free of `record` by `api`, happening now, into its record (1), at the place
  // the calling thread's run gives it (JournalWriter::free_place); false where it may not
  // be: the free needs a record of its own.
  __attribute__((always_inline)) bool free_in_place(const LiveRecord &record, Api api, uint32_t barriers) noexcept {
    static_assert(static_cast<uint32_t>(Api::Count) <= 1u << (32 - journal::kFreedInPlaceApiShift));
    if (!record.in_journal() || record.barrier != barriers) return false;
    LG_ASSERT(record.details_at < journal_.next_slot());  // a slot this writer handed out
    const auto api_id = static_cast<uint32_t>(api);
    if (api_id == 0) return false;
    const uint64_t free_slot =
        journal_.free_place(record.details_at, barriers, event_clock_ns, mode_ != JournalMode::Compact);
    // Past the record's own slot: a program cannot free a value before its allocation returns.
    if (free_slot <= record.details_at || free_slot - record.details_at > journal::kFreedInPlaceMaxSlots) return false;
    journal_.store_in_place<journal::kFreedInPlaceOffset>(
        record.details_at,
        api_id << journal::kFreedInPlaceApiShift | static_cast<uint32_t>(free_slot - record.details_at));
    return true;
  }

  // What the table does not keep of `record`, read back (3); all of it together.
  AllocationDetails details(const LiveRecord &record) const noexcept;
  HandleRecord full(const LiveRecord &record) const noexcept;
  // Once `record` has left the table for good: its side-store entry given back.
  void forget(const LiveRecord &record) noexcept {
    if (record.in_side_store()) side_store_.release(record.details_at);
  }

  // Leaks whose details only the side store holds (made while the journal was full): no
  // record lists them, so lease ends and context destroys count them.
  struct Unjournaled {
    uint64_t allocations = 0;
    uint64_t bytes = 0;
    void count(const LiveRecord &record, const AllocationRecords &records) noexcept {
      if (!record.in_side_store()) return;
      ++allocations;
      bytes += records.side_store_.get(record.details_at).bytes;
    }
  };

  // A compact journal: writes what the calling thread recycled and has not yet counted in a
  // Recycled record (at its exit, and at the process's end for the thread that ends it).
  void write_recycled_counts() noexcept;

  size_t side_store_bytes() const { return side_store_.memory_bytes(); }

  struct LastRecord;  // a compact journal's per-thread state (allocation_records.cpp)

 private:
  uint64_t write_compact(const journal::AllocPayload &alloc, uint32_t barriers, uint64_t epoch) noexcept;
  // The first record of a thread: its exit gives its run of slots up (Tracker::on_thread_exit).
  static inline thread_local bool t_exit_noted __attribute__((tls_model("initial-exec"))) = false;
  __attribute__((noinline, cold)) static void note_thread_exit() noexcept;
  void write_recycled(LastRecord &last) noexcept;
  // Out of line: rare (the journal is closed or full), and on_alloc keeps its registers.
  __attribute__((noinline)) uint32_t keep_in_side_store(const journal::AllocPayload &alloc, int32_t device) noexcept;

  journal::JournalWriter &journal_;
  const JournalMode mode_;
  const uint64_t tracker_number_;  // tells this tracker's per-thread state from another's
  SideStore side_store_;
};

}  // namespace leaseguard
