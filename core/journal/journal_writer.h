// Appends records to one process's journal through a file-backed shared mapping.
//
// Why a shared mapping: a store into a MAP_SHARED page is in the kernel's page cache the
// moment it is made, so a record survives SIGKILL of the process at any later instant,
// and the hot path (an allocation) costs one atomic add and a 64-byte copy, no system call.
// Durability against power loss is not promised (no msync).
//
// The file is mapped in chunks of 2 MiB, each wherever the kernel places it (huge-page
// aligned where the address space allows), found through a table by slot: no address
// range is reserved ahead, so the program's address space holds only what the journal has
// written (a program under `ulimit -v` keeps its own room). The file grows in steps from
// 32 KiB, doubling up to 2 MiB, so a program that records little leaves a small file.
//
// A store into a page of a file mapping whose disk blocks cannot be allocated (the file
// system is full, a tmpfs at its size limit) is answered by SIGBUS, which would kill the
// program, and growing a file past RLIMIT_FSIZE (`ulimit -f`) by SIGXFSZ. So no record is
// written where the file's blocks are not already allocated (fallocate, or zeros written
// where it is not supported), and the file never grows past the limit: writers stay below
// writable_slots_, and a journal that cannot grow drops its records (counted) instead.
//
// The descriptor is the program's too: a daemon that closes every descriptor and opens its
// own files may be given the journal's number, and dup2 may put another file there. So it
// is used only to grow the file (the mapping needs none) and never before fstat says it is
// still the journal (device and inode); if not, the journal is opened again by its path
// and the same check made, and if that fails too the journal stops growing, with a warning
// that says it was taken away.
//
// Each thread takes its slots in runs (1 to kMaxRunSlots slots, by one atomic add on the
// shared slot counter, sized by how fast it fills them) and writes its one-slot records into
// its own run with no shared cache line: records within a thread are in the journal in the
// order they were made, and records of different threads in the order of their runs. A run
// serves only under the epoch it was taken in (the caller's: the tracker's barrier count and
// the event clock's tick), so a lease's end, a context's destroy or a check starts new runs
// behind it, and records of two threads are never more than one tick out of order. A run
// given up before it is full gets an Unused record over what is left of it, so readers
// skip it whole; a thread killed in the middle of a run leaves its unwritten slots zero,
// which readers skip one by one, as any slot not committed. Records of more than one slot,
// and every record not appended through append_one_slot, take their slots from the counter
// itself, after every run handed out so far; the thread that appends one gives up its run,
// so that its own later records come after it.
//
// What an append really costs is the first touch of each fresh page of the file: a page
// fault, several microseconds on virtual machines, for every 64 records. Chunks after the
// first are hinted (MADV_HUGEPAGE), which on file systems with large folios turns 512 of
// those faults into one; and once a megabyte has been written, a thread of the writer's
// faults pages in ahead of the writers.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "background_thread.h"
#include "journal_format.h"
#include "lg_assert.h"

namespace leaseguard::journal {

class JournalWriter {
 public:
  JournalWriter() = default;
  JournalWriter(const JournalWriter &) = delete;
  JournalWriter &operator=(const JournalWriter &) = delete;
  ~JournalWriter();

  // Creates `name` in the directory `directory_fd` exclusively (never follows a symbolic
  // link, never reuses a file) with mode 0600 and writes the header record. `path` is where
  // that is (absolute): the name warnings give, and where it is opened again if its
  // descriptor is taken away. On failure returns false and sets `error` (errno is kept).
  bool open_in(int directory_fd, const std::string &name, const std::string &path, const HeaderPayload &header,
               std::string &error);
  // The same at `path`, relative to the working directory (tests).
  bool open(const std::string &path, const HeaderPayload &header, std::string &error);

  // Appends one record; payloads larger than one slot are split across continuation slots.
  // Returns false (and counts the record as dropped) if the journal is not open, the payload
  // is too large, or the file cannot grow.
  bool append(RecordType type, const void *payload, size_t bytes) noexcept;

  // The same for a payload that fits one slot, in the calling thread's run (the file
  // comment), without the general path's loop (the hot path of every allocation); returns
  // the record's slot, or kNoSlot if it was dropped. `epoch`: make_epoch's, the caller's now.
  static constexpr uint64_t kNoSlot = UINT64_MAX;
  template <typename Payload>
  __attribute__((always_inline)) uint64_t append_one_slot(RecordType type, const Payload &payload,
                                                          uint64_t epoch = 0) noexcept {
    static_assert(sizeof(Payload) <= kSlotPayloadBytes);
    if (!takes_any_.load(std::memory_order_relaxed)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return kNoSlot;
    }
    ThreadRun &run = t_run;
    uint64_t slot;
    if (__builtin_expect(run.writer == generation_ && run.epoch == epoch && run.next < run.end, true)) {
      slot = run.next++;
    } else {
      slot = take_run(type, epoch);
      if (slot == kNoSlot) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return kNoSlot;
      }
    }
    if (slot + kPrefaultAheadSlots > writable_slots_.load(std::memory_order_acquire) && slot >= kPrefaultAfterSlots)
      ask_prefaulter();
    LG_ASSERT(slot < writable_slots_.load(std::memory_order_relaxed));  // take_run made the whole run so
    unsigned char *at = slot_address(slot);
    // A slot is a fresh cache line, most likely not in this core's cache (the prefaulter
    // zeroed its page elsewhere): ask for the one a few records on now, so that its miss is
    // taken while the program runs instead of in a later allocation's write. Measured on
    // bench/compare's loop: ~10 ns a pair (bench/README.md, "The journal's fresh memory").
    // A plain prefetch: the write-intent form (PREFETCHW) is not on every x86-64, and where
    // it is it read no better (bench/README.md). Past a chunk's end it names another
    // mapping or none: a prefetch never faults.
    __builtin_prefetch(at + kPrefetchAheadSlots * kSlotBytes, 1, 3);
    std::memcpy(at + 4, &payload, sizeof payload);
    __atomic_store_n(reinterpret_cast<uint32_t *>(at), make_tag(type, 1), __ATOMIC_RELEASE);
    return slot;
  }

  // An epoch, as append_one_slot and the others take it: the tracker's barrier count and the
  // event clock's tick (about 4 ms of `time_ns`).
  static constexpr uint64_t make_epoch(uint32_t barrier, uint64_t time_ns) noexcept {
    return (time_ns >> kTickShift) << 32 | barrier;
  }

  // Where a free of the allocation recorded at `allocation_slot` happens now, for a free
  // stored in place: before the slot the calling thread's next record will take, if its run
  // still serves under this barrier (and, with `within_a_tick` once other threads record
  // too, this tick: `now_ns` is asked for then only); else after every slot handed out so
  // far, and the thread's run is given up, so that its later records come after the free.
  // A compact journal passes `within_a_tick` false: its loop's slot keeps its place among
  // other threads' records whatever the time (last_of_this_thread), and so do its frees.
  template <typename Now>
  __attribute__((always_inline)) uint64_t free_place(uint64_t allocation_slot, uint32_t barrier, Now now_ns,
                                                     bool within_a_tick = true) noexcept {
    ThreadRun &run = t_run;
    if (run.writer == generation_ && run.next > allocation_slot && static_cast<uint32_t>(run.epoch) == barrier &&
        (!within_a_tick || !several_threads_.load(std::memory_order_relaxed) ||
         run.epoch == make_epoch(barrier, now_ns())))
      return run.next;
    give_up_run();
    return next_slot_.load(std::memory_order_acquire);
  }

  // Writes a one-slot record over the record at `slot`, if that is still the calling thread's
  // last record, in its run under `epoch`'s barrier (nothing appended after it in the thread's order);
  // false, and nothing written, if not. The first tag is cleared before the payload changes
  // and set after, so a process killed meanwhile leaves an uncommitted slot, never a record
  // made of two. Only the record's writer may call it, and only once no one else can read
  // or write the record (compact journals: see kHeaderCompact).
  template <typename Payload>
  bool replace_last_one_slot(uint64_t slot, RecordType type, const Payload &payload, uint64_t epoch = 0) noexcept {
    static_assert(sizeof(Payload) <= kSlotPayloadBytes);
    if (!open_ || !last_of_this_thread(slot, epoch)) return false;
    LG_ASSERT(slot < writable_slots_.load(std::memory_order_relaxed));  // the last record was written
    overwrite_one_slot(slot_address(slot), type, payload);
    return true;
  }

  // The same, only if the 32-bit word `marked_offset` bytes into the record's payload is
  // non-zero (store_in_place set it), giving the old record's 64-bit field at `field_offset`
  // back in `old_field`: a compact journal's recycling of a freed allocation's record, with
  // the slot's address found once (allocation_records.cpp).
  template <typename Payload>
  bool replace_last_if_marked(uint64_t slot, size_t marked_offset, size_t field_offset, uint64_t &old_field,
                              RecordType type, const Payload &payload, uint64_t epoch) noexcept {
    static_assert(sizeof(Payload) <= kSlotPayloadBytes);
    if (!open_ || !last_of_this_thread(slot, epoch)) return false;
    LG_ASSERT(slot < writable_slots_.load(std::memory_order_relaxed));  // the last record was written
    LG_ASSERT(marked_offset % 4 == 0 && marked_offset + 4 <= kSlotPayloadBytes);
    LG_ASSERT(field_offset + sizeof old_field <= kSlotPayloadBytes);
    unsigned char *at = slot_address(slot);
    if (__atomic_load_n(reinterpret_cast<const uint32_t *>(at + 4 + marked_offset), __ATOMIC_ACQUIRE) == 0)
      return false;
    std::memcpy(&old_field, at + 4 + field_offset, sizeof old_field);
    overwrite_one_slot(at, type, payload);
    return true;
  }

  // Reads what store_in_place stored (or the record's own bytes there): 0 if no such slot.
  uint32_t load_in_place(uint64_t slot, size_t payload_offset) const noexcept {
    const unsigned char *at = payload_at(slot, payload_offset, sizeof(uint32_t));
    return at != nullptr ? __atomic_load_n(reinterpret_cast<const uint32_t *>(at), __ATOMIC_ACQUIRE) : 0;
  }

  // Stores `value` into the committed record at `slot`, `payload_offset` bytes into its
  // payload (4-byte aligned, within the first slot): one atomic store, which a reader sees
  // whole or not at all. `slot` must be one this writer returned from an append (it is
  // not checked: every free of a recent allocation does this).
  template <size_t kPayloadOffset>
  void store_in_place(uint64_t slot, uint32_t value) noexcept {
    static_assert(kPayloadOffset % 4 == 0 && kPayloadOffset + sizeof value <= kSlotPayloadBytes);
    LG_ASSERT(slot < next_slot_.load(std::memory_order_relaxed));  // one an append returned
    LG_ASSERT(slot < writable_slots_.load(std::memory_order_relaxed));
    __atomic_store_n(reinterpret_cast<uint32_t *>(slot_address(slot) + 4 + kPayloadOffset), value, __ATOMIC_RELEASE);
  }

  // The same for a signal handler: if the file must grow and another thread holds the lock
  // for that, the record is dropped (and counted) instead of waiting. The interrupted
  // thread's run is left as it is (the handler may have interrupted a write into it), so
  // the record may read up to a tick before records the thread made just before it.
  bool append_from_signal_handler(RecordType type, const void *payload, size_t bytes) noexcept;

  // Gives up the calling thread's run, an Unused record over what is left of it (at a
  // thread's exit, and before anything that must come after all of the thread's records).
  void give_up_run() noexcept;

  // Copies out the payload of the one-slot record this process wrote at `slot` (what the live
  // table reads back instead of keeping it); false if there is no such slot.
  template <typename Payload>
  bool read_one_slot(uint64_t slot, Payload &payload) const noexcept {
    static_assert(sizeof(Payload) <= kSlotPayloadBytes);
    const unsigned char *at = payload_at(slot, 0, sizeof payload);
    if (at != nullptr) std::memcpy(&payload, at, sizeof payload);
    return at != nullptr;
  }

  bool is_open() const noexcept { return open_; }
  // The slot the next record will take: every record appended so far lies before it.
  uint64_t next_slot() const noexcept { return next_slot_.load(std::memory_order_acquire); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  const std::string &path() const noexcept { return path_; }

  // Unmaps without writing anything: for a forked child, whose journal is not its parent's.
  // (A forked child has no prefaulting thread: it is its parent's.) The descriptor is
  // closed only if `close_descriptor` and it is still the journal's: a child made by a raw
  // clone() may share the descriptor table with its parent, whose journal it still is.
  void abandon(bool close_descriptor = true) noexcept;

  // Starts a thread that maps the file ahead of the writers and faults its pages in
  // (prefault_by), so that the kernel's zeroing of fresh pages, most of what an
  // append costs on a cold machine, is not paid inside the program's allocation calls.
  // stop_prefaulting() joins it for good; the destructor too. suspend_prefaulting() joins it
  // and lets the next writer that wants it start it again (around a system call that a
  // multithreaded process may not make: see interpose/hooks/namespace_hooks.cpp).
  // Started only once a megabyte has been written (wants_prefaulter): a program that records
  // less never gets the thread, and stays single-threaded if it was (glibc's allocator takes
  // fewer locks in a single-threaded process). The owner starts it outside its own locks.
  void start_prefaulting() noexcept;
  void stop_prefaulting() noexcept;
  void suspend_prefaulting() noexcept;
  // How that thread faults pages in: MADV_POPULATE_WRITE (Linux 5.14 and later), or, where
  // the kernel refuses it (RHEL 8's 4.18, gVisor), by writing each page's first word with
  // its own value. It falls back by itself; tests choose Touching to exercise that path.
  enum class PrefaultBy { Madvise, Touching };
  void prefault_by(PrefaultBy method) noexcept { prefault_by_ = method; }  // before start_prefaulting
  bool wants_prefaulter() const noexcept { return prefaulter_start_.load(std::memory_order_relaxed) == kStartWanted; }

  // How many slots a thread's run takes at most, and at first.
  static constexpr uint32_t kMaxRunSlots = 32;
  static constexpr uint32_t kFirstRunSlots = 4;

  // The mapping: chunks of kChunkBytes, found by slot.
  static constexpr size_t kChunkBytes = size_t{2} << 20;
  static constexpr uint64_t kChunkSlots = kChunkBytes / kSlotBytes;
  static constexpr size_t kMaxChunks = 8192;  // 16 GiB: 268M records

 private:
  // A thread's run: slots [next, end) of the writer whose generation is `writer`, under
  // `epoch`. One per thread for every writer (a thread writes one journal at a time: a test's
  // second writer, or a forked child's new journal, finds the run another's and takes one).
  struct ThreadRun {
    uint64_t writer;  // 0: none
    uint64_t next;
    uint64_t end;
    uint64_t epoch;
    uint32_t size;
  };
  // Defined here, constant-initialized: no other file's access asks for its initialization.
  static inline thread_local ThreadRun t_run __attribute__((tls_model("initial-exec"))){};
  static constexpr unsigned kTickShift = kThreadRunTickShift;  // ~4.2 ms: about the coarse clock's tick
  // Takes the calling thread a new run under `epoch` (the old one given up) and returns its
  // first slot, every slot of it writable; kNoSlot if the journal cannot take it.
  __attribute__((noinline)) uint64_t take_run(RecordType type, uint64_t epoch) noexcept;
  // Notes that the calling thread records (several_threads_ once a second one does).
  void note_thread() noexcept;
  // Whether `slot` holds the calling thread's last record, in its run, under the barrier of
  // `epoch`. The tick is not asked: a compact journal's loop keeps writing over one slot
  // however long it runs, so that slot keeps its place among other threads' records.
  bool last_of_this_thread(uint64_t slot, uint64_t epoch) const noexcept {
    const ThreadRun &run = t_run;
    return run.writer == generation_ && static_cast<uint32_t>(run.epoch) == static_cast<uint32_t>(epoch) &&
           run.next == slot + 1;
  }
  // Writes a one-slot record at `at` over the one there: the tag cleared before the payload
  // changes and set after (replace_last_one_slot).
  template <typename Payload>
  static void overwrite_one_slot(unsigned char *at, RecordType type, const Payload &payload) noexcept {
    __atomic_store_n(reinterpret_cast<uint32_t *>(at), 0u, __ATOMIC_RELAXED);
    // The cleared tag must reach memory before the payload does. x86-64 (the only target:
    // see CMakeLists.txt) makes stores visible in program order; the compiler must keep it.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    std::memcpy(at + 4, &payload, sizeof payload);
    __atomic_store_n(reinterpret_cast<uint32_t *>(at), make_tag(type, 1), __ATOMIC_RELEASE);
  }
  // Where slot `slot` is in memory; only for slots below mapped_slots_ (acquired). A chunk is
  // kept as its origin (see chunk_origins_), so a slot is found with one load and an add.
  unsigned char *slot_address(uint64_t slot) const noexcept {
    LG_ASSERT(slot / kChunkSlots < kMaxChunks);
    LG_ASSERT(slot < mapped_slots_.load(std::memory_order_acquire));  // its chunk is mapped
    return reinterpret_cast<unsigned char *>(chunk_origins_[slot / kChunkSlots].load(std::memory_order_relaxed) +
                                             slot * kSlotBytes);
  }
  // Takes ownership of the new journal's descriptor and writes the header.
  bool start(int fd, const std::string &path, const HeaderPayload &header, std::string &error);
  // Maps chunks until every slot below `slot_end` has memory (the file may still be
  // shorter: only slots below writable_slots_ may be touched).
  bool ensure_mapped(uint64_t slot_end) noexcept;
  unsigned char *map_chunk(size_t index, int fd) noexcept;
  // Maps the file and allocates its disk blocks up to at least `slot_end`, so that writing
  // there cannot raise SIGBUS. False if the file system, the file size limit or the
  // journal's descriptor cannot give them (or, with may_block false, another thread is
  // growing the file).
  bool ensure_writable(uint64_t slot_end, bool may_block = true) noexcept;
  bool grow_once(uint64_t writable, bool may_block) noexcept;
  bool allocate_blocks(int fd, size_t offset, size_t bytes) noexcept;
  // The journal's descriptor, checked to be the journal still (see the file comment), or -1
  // with errno set. Called with grow_mutex_ held.
  int checked_descriptor(bool may_block) noexcept;
  // Whether `slots` slots from `first` may be written, growing the file if needed. Records
  // that end something (a lease, a context, a pool, the process; Recycled counts) may use
  // the last kEndingReserveSlots of what is writable; other records leave them, and once the
  // file cannot grow, stop taking slots at all (full_), so the endings still fit: a report
  // of a process whose journal filled up still says how its leases ended, and how many
  // records were lost.
  static constexpr uint64_t kEndingReserveSlots = 256;
  static constexpr bool ends_something(RecordType type) noexcept {
    return type == RecordType::LeaseEnd || type == RecordType::ProcessEnd || type == RecordType::ContextDestroy ||
           type == RecordType::PoolDestroy || type == RecordType::Recycled || type == RecordType::JournalFull ||
           type == RecordType::UnjournaledLeaks;
  }
  bool room_for(RecordType type, uint64_t first, size_t slots, uint64_t writable, bool may_block) noexcept {
    LG_ASSERT(slots >= 1 && slots <= kMaxSlotsPerRecord);
    const uint64_t end = first + slots + (ends_something(type) ? 0 : kEndingReserveSlots);
    if (end <= writable || ensure_writable(end, may_block)) return true;
    if (full_.load(std::memory_order_relaxed)) write_journal_full_once();
    return false;
  }
  // A JournalFull record, by the first writer to find the file full (outside the lock).
  void write_journal_full_once() noexcept;
  // Where `bytes` bytes at `payload_offset` into the payload of the written slot `slot` are,
  // or nullptr if that is outside the slot's payload or what the file holds.
  unsigned char *payload_at(uint64_t slot, size_t payload_offset, size_t bytes) const noexcept {
    if (!open_ || payload_offset + bytes > kSlotPayloadBytes) return nullptr;
    if (slot >= writable_slots_.load(std::memory_order_acquire)) return nullptr;
    return slot_address(slot) + 4 + payload_offset;
  }
  void ask_prefaulter() noexcept {
    if (!prefaulting_.load(std::memory_order_relaxed)) {
      int state = kStartNotYet;
      if (prefaulter_start_.load(std::memory_order_relaxed) == kStartNotYet)
        prefaulter_start_.compare_exchange_strong(state, kStartWanted, std::memory_order_relaxed);
      return;
    }
    if (!prefault_wanted_.load(std::memory_order_relaxed) &&
        !prefault_wanted_.exchange(true, std::memory_order_acq_rel))
      wake_prefaulter();
  }
  void wake_prefaulter() noexcept;
  void prefault_loop() noexcept;
  void prefault_pages(bool &populate, uint64_t &populated) noexcept;
  void join_prefaulter(bool for_good) noexcept;
  static void touch_for_writing(unsigned char *from, unsigned char *to) noexcept;
  // How far ahead of the writers the prefaulting thread keeps the file mapped and faulted in:
  // as far as has been written, up to 16 MiB, and nothing until 1 MiB has been: faulted-in
  // pages are memory and, dirty, disk writes, which a program that records little must not
  // pay for.
  static constexpr uint64_t kPrefaultAheadSlots = (uint64_t{16} << 20) / kSlotBytes;
  static constexpr uint64_t kPrefaultAfterSlots = (uint64_t{1} << 20) / kSlotBytes;
  // How many slots ahead a writer asks for the cache line it will write (append_one_slot):
  // far enough that the line arrives before the next few records need it, near enough that
  // it is still in the cache then.
  static constexpr uint64_t kPrefetchAheadSlots = 4;
  uint64_t append_impl(RecordType type, const void *payload, size_t bytes, bool may_block) noexcept;

  bool open_ = false;
  int fd_ = -1;
  dev_t device_ = 0;  // the journal file's identity, to know its descriptor is still its own
  ino_t inode_ = 0;
  std::string path_;
  // Chunk i's origin: the address slot 0 would have if the journal were one mapping with
  // chunk i where it is (its address minus i chunks, modulo 2^64); 0 while it is not mapped.
  // (A chunk the kernel placed exactly i chunks above address 0 would read as unmapped only to
  // abandon(), which would then leave its mapping in place: never a wrong address.)
  std::atomic<uintptr_t> chunk_origins_[kMaxChunks] = {};
  std::atomic<uint64_t> next_slot_{0};
  uint64_t generation_ = 0;  // this open's number, unique in the process: a thread's run names it
  // Runs were taken by more than one thread (a free then asks the clock whether its run is
  // of this tick: one thread's own records are in order whatever the time).
  std::atomic<bool> several_threads_{false};
  std::atomic<const void *> first_thread_{nullptr};  // the first thread to take a run (its run's address)
  std::atomic<uint64_t> mapped_slots_{0};
  std::atomic<uint64_t> writable_slots_{0};  // <= mapped_slots_: in the file, blocks allocated
  int grow_error_ = 0;                       // the errno that stopped the file from growing; then it never grows again
  std::atomic<bool> full_{false};            // the file cannot grow: only endings are still written (room_for)
  // open_ and not full_: any record may still be appended. One load for the hot path's test.
  std::atomic<bool> takes_any_{false};
  std::atomic<bool> full_written_{false};
  std::atomic<int> full_error_{0};  // grow_error_, for the JournalFull record
  std::atomic<uint64_t> dropped_{0};
  std::mutex grow_mutex_;
  std::atomic<bool> prefaulting_{false};
  static constexpr int kStartNotYet = 0, kStartWanted = 1, kStartTried = 2;
  std::atomic<int> prefaulter_start_{kStartNotYet};
  std::atomic<bool> prefault_wanted_{false};
  bool prefault_stop_ = false;
  bool prefault_stopped_for_good_ = false;
  PrefaultBy prefault_by_ = PrefaultBy::Madvise;
  std::mutex prefault_mutex_;
  std::condition_variable prefault_wake_;
  BackgroundThread prefaulter_;
};

}  // namespace leaseguard::journal
