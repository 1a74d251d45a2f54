// Implementation of the journal writer (see journal_writer.h for why it is built this way).
#include "journal_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "event_clock.h"
#include "files.h"
#include "log.h"
#include "writer_liveness.h"

namespace leaseguard::journal {
namespace {

constexpr size_t kChunkBytes = JournalWriter::kChunkBytes;
constexpr uint64_t kMaxJournalBytes = uint64_t{JournalWriter::kMaxChunks} * kChunkBytes;
constexpr int kMadvisePopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), not in older headers
constexpr size_t kPageBytes = 4096;
// The prefaulting thread's stack: it only maps, advises and formats a warning.
constexpr size_t kPrefaulterStackBytes = size_t{128} << 10;

// The file grows in steps ahead of the writers (its disk blocks allocated: see
// journal_writer.h): to 32 KiB at first, the header and the slots kept for endings with
// room to spare, then doubling up to 2 MiB at a time. A program that records little leaves
// a file of a few pages; one that records much grows it rarely.
constexpr size_t kFirstFileBytes = size_t{32} << 10;
size_t growth_step_at(size_t offset) {
  return offset < kFirstFileBytes ? kFirstFileBytes - offset : std::min(offset, kChunkBytes);
}

// RLIMIT_FSIZE: growing a file past it raises SIGXFSZ, which kills the program.
uint64_t file_size_limit() noexcept {
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return limit.rlim_cur;
}

bool same_file(int fd, dev_t device, ino_t inode) noexcept {
  struct stat status {};
  return fd >= 0 && fstat(fd, &status) == 0 && status.st_dev == device && status.st_ino == inode;
}

}  // namespace

JournalWriter::~JournalWriter() {
  stop_prefaulting();
  abandon();
}

// --- Opening ------------------------------------------------------------------------------------

bool JournalWriter::open(const std::string &path, const HeaderPayload &header, std::string &error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot create journal " + path + ": " + std::strerror(errno);
    return false;
  }
  if (start(fd, absolute_path(path), header, error)) return true;
  const int saved = errno;
  unlink(path.c_str());
  errno = saved;
  return false;
}

bool JournalWriter::open_in(int directory_fd, const std::string &name, const std::string &path,
                            const HeaderPayload &header, std::string &error) {
  const int fd = ::openat(directory_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot create journal " + path + ": " + std::strerror(errno);
    return false;
  }
  if (start(fd, path, header, error)) return true;
  const int saved = errno;
  unlinkat(directory_fd, name.c_str(), 0);
  errno = saved;
  return false;
}

bool JournalWriter::start(int fd, const std::string &path, const HeaderPayload &header, std::string &error) {
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    error = "cannot use journal " + path + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  fd_ = fd;
  static std::atomic<uint64_t> opened{0};
  generation_ = opened.fetch_add(1, std::memory_order_relaxed) + 1;
  hold_writer_lock(fd);  // readers tell a running writer from a dead one (writer_liveness.h)
  device_ = status.st_dev;
  inode_ = status.st_ino;
  path_ = path;
  open_ = true;
  takes_any_.store(true, std::memory_order_relaxed);
  if (!ensure_writable(1)) {
    const int saved = errno;
    error = "cannot grow journal " + path + ": " + std::strerror(grow_error_ != 0 ? grow_error_ : saved);
    abandon();
    errno = saved;
    return false;
  }
  append(RecordType::Header, &header, sizeof header);
  return true;
}

// --- Growing ------------------------------------------------------------------------------------

int JournalWriter::checked_descriptor(bool may_block) noexcept {
  if (same_file(fd_, device_, inode_)) return fd_;
  // Not the journal any more: the program closed it (and perhaps opened a file of its own
  // that got its number) or put another file there with dup2. That descriptor is the
  // program's now and is never touched again; the journal is opened anew by its path, and
  // used only if it is still the same file.
  const int lost = fd_;
  const int fd = ::open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (same_file(fd, device_, inode_)) {
    fd_ = fd;
    hold_writer_lock(fd);  // the program's close of the old descriptor dropped it
    if (may_block)
      log_warning("the program closed or replaced descriptor %d, the journal %s; leaseguard opened it again", lost,
                  path_.c_str());
    return fd_;
  }
  if (fd >= 0) ::close(fd);
  fd_ = -1;
  errno = EBADF;
  return -1;
}

bool JournalWriter::ensure_writable(uint64_t slot_end, bool may_block) noexcept {
  if (slot_end <= writable_slots_.load(std::memory_order_acquire)) return true;
  std::unique_lock lock(grow_mutex_, std::defer_lock);
  if (may_block) lock.lock();
  else if (!lock.try_lock()) return false;
  while (writable_slots_.load(std::memory_order_relaxed) < slot_end) {
    if (grow_error_ != 0) return false;
    errno = 0;
    if (grow_once(writable_slots_.load(std::memory_order_relaxed), may_block)) continue;
    grow_error_ = errno != 0 ? errno : ENOSPC;
    full_error_.store(grow_error_, std::memory_order_relaxed);
    full_.store(true, std::memory_order_release);
    takes_any_.store(false, std::memory_order_relaxed);
    // Not from a signal handler (may_block false): formatting is not safe there.
    if (!may_block) return false;
    const char *consequence =
        "allocations from now on are tracked, and their leaks counted, but not listed in its report";
    if (grow_error_ == EBADF)
      log_warning(
          "the journal %s was taken away from leaseguard (the program closed or replaced its descriptor, and "
          "the file cannot be opened again): %s",
          path_.c_str(), consequence);
    else if (grow_error_ == EFBIG && file_size_limit() != UINT64_MAX)
      log_warning("the journal %s reached the file size limit (ulimit -f: %llu bytes): %s", path_.c_str(),
                  static_cast<unsigned long long>(file_size_limit()), consequence);
    else log_warning("cannot grow the journal %s (%s): %s", path_.c_str(), std::strerror(grow_error_), consequence);
    return false;
  }
  return true;
}

// One step of growth: the file's next blocks, mapped. Called with grow_mutex_ held.
bool JournalWriter::grow_once(uint64_t writable, bool may_block) noexcept {
  const size_t offset = writable * kSlotBytes;
  size_t step = growth_step_at(offset);
  const uint64_t limit = std::min<uint64_t>(file_size_limit(), kMaxJournalBytes);
  if (offset + step > limit) step = limit > offset ? (limit - offset) / kSlotBytes * kSlotBytes : 0;
  if (step == 0) {
    errno = EFBIG;  // the file size limit, or the most records a journal holds
    return false;
  }
  const int fd = checked_descriptor(may_block);
  if (fd < 0) return false;
  const uint64_t end = (offset + step) / kSlotBytes;
  LG_ASSERT(end > writable && step % kSlotBytes == 0);  // writable slots only ever grow
  if (!ensure_mapped(end) || !allocate_blocks(fd, offset, step)) return false;
  writable_slots_.store(end, std::memory_order_release);
  return true;
}

bool JournalWriter::allocate_blocks(int fd, size_t offset, size_t bytes) noexcept {
  if (fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) == 0) return true;
  if (errno != EOPNOTSUPP && errno != ENOSYS) return false;
  // A file system without fallocate: zeros written allocate the blocks, or fail as a
  // store into the mapping would not (with an error instead of SIGBUS). The range is past
  // everything written, so the zeros overwrite nothing.
  static const unsigned char zeros[64 << 10] = {};
  for (size_t done = 0; done < bytes;) {
    const size_t piece = std::min(bytes - done, sizeof zeros);
    const ssize_t wrote = pwrite(fd, zeros, piece, static_cast<off_t>(offset + done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += static_cast<size_t>(wrote);
  }
  return true;
}

// Called with grow_mutex_ held.
bool JournalWriter::ensure_mapped(uint64_t slot_end) noexcept {
  uint64_t mapped = mapped_slots_.load(std::memory_order_relaxed);
  while (mapped < slot_end) {
    const size_t index = mapped / kChunkSlots;
    if (index >= kMaxChunks) {
      errno = EFBIG;
      return false;
    }
    unsigned char *chunk = map_chunk(index, fd_);
    if (chunk == nullptr) return false;
    chunk_origins_[index].store(reinterpret_cast<uintptr_t>(chunk) - index * kChunkBytes, std::memory_order_release);
    mapped += kChunkSlots;
    LG_ASSERT(mapped % kChunkSlots == 0);  // whole chunks, in order
    mapped_slots_.store(mapped, std::memory_order_release);
  }
  return true;
}

// Maps chunk `index` of the file, huge-page aligned if the address space has room to
// align it (a program under `ulimit -v` may not: then wherever it fits).
unsigned char *JournalWriter::map_chunk(size_t index, int fd) noexcept {
  const auto offset = static_cast<off_t>(index * kChunkBytes);
  void *chunk = MAP_FAILED;
  void *area = mmap(nullptr, 2 * kChunkBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area != MAP_FAILED) {
    const auto begin = reinterpret_cast<uintptr_t>(area);
    const uintptr_t aligned = (begin + kChunkBytes - 1) & ~(uintptr_t{kChunkBytes} - 1);
    chunk = mmap(reinterpret_cast<void *>(aligned), kChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                 offset);
    if (chunk == MAP_FAILED) {
      munmap(area, 2 * kChunkBytes);
    } else {
      if (aligned > begin) munmap(area, aligned - begin);
      const uintptr_t end = aligned + kChunkBytes;
      if (begin + 2 * kChunkBytes > end) munmap(reinterpret_cast<void *>(end), begin + 2 * kChunkBytes - end);
    }
  } else {
    chunk = mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
  }
  if (chunk == MAP_FAILED) return nullptr;
  // A hint: where the file system supports large folios (ext4, xfs on recent kernels), a
  // first touch then maps 2 MiB at once instead of one 4 KiB page per fault. Not for the
  // first chunk: a huge folio is written back whole, and a program that records a few
  // allocations should leave a journal of a few pages on disk, not 2 MiB.
  if (index != 0) madvise(chunk, kChunkBytes, MADV_HUGEPAGE);
  return static_cast<unsigned char *>(chunk);
}

void JournalWriter::write_journal_full_once() noexcept {
  if (full_written_.exchange(true, std::memory_order_acq_rel)) return;
  JournalFullPayload full{};
  full.time_ns = monotonic_ns();  // clock_gettime: safe in a signal handler too
  full.error = full_error_.load(std::memory_order_relaxed);
  append_impl(RecordType::JournalFull, &full, sizeof full, false);
}

// --- Appending ----------------------------------------------------------------------------------

bool JournalWriter::append(RecordType type, const void *payload, size_t bytes) noexcept {
  // After every record the thread made before it: its run is given up, and its next one is
  // taken after this record.
  give_up_run();
  if (!several_threads_.load(std::memory_order_relaxed)) note_thread();
  return append_impl(type, payload, bytes, true) != kNoSlot;
}

void JournalWriter::note_thread() noexcept {
  const void *self = &t_run;
  // A plain load first: a single-threaded program's general appends then take no locked
  // instruction here.
  if (first_thread_.load(std::memory_order_relaxed) == self) return;
  const void *first = nullptr;
  if (!first_thread_.compare_exchange_strong(first, self, std::memory_order_relaxed) && first != self)
    several_threads_.store(true, std::memory_order_relaxed);
}

void JournalWriter::give_up_run() noexcept {
  ThreadRun &run = t_run;
  if (run.writer != generation_) return;
  run.writer = 0;
  if (run.next >= run.end || !open_) return;
  // What is left of the run is never written: one Unused record says so, for the readers
  // to skip it whole (a live reader would otherwise wait on its slots for ever).
  UnusedPayload unused{};
  unused.slots = static_cast<uint32_t>(run.end - run.next - 1);
  unsigned char *at = slot_address(run.next);
  std::memcpy(at + 4, &unused, sizeof unused);
  __atomic_store_n(reinterpret_cast<uint32_t *>(at), make_tag(RecordType::Unused, 1), __ATOMIC_RELEASE);
}

uint64_t JournalWriter::take_run(RecordType type, uint64_t epoch) noexcept {
  ThreadRun &run = t_run;
  uint32_t size = kFirstRunSlots;
  if (run.writer == generation_) {
    // A run used up asks for a longer one; a run given up half used, a shorter one: a thread
    // that records once a tick takes one slot at a time, and leaves no unused ones.
    const bool used_up = run.next >= run.end;
    size = used_up ? std::min(run.size * 2, kMaxRunSlots) : std::max(run.size / 2, 1u);
    if (!used_up) give_up_run();
  } else if (!several_threads_.load(std::memory_order_relaxed)) {
    note_thread();
  }
  run.writer = 0;
  const uint64_t first = next_slot_.fetch_add(size, std::memory_order_relaxed);
  if (!room_for(type, first, size, writable_slots_.load(std::memory_order_acquire), true)) return kNoSlot;
  LG_ASSERT(first + size <= writable_slots_.load(std::memory_order_relaxed));
  // The run's first line, and the next ones, are fresh memory: asked for now (see
  // append_one_slot's prefetch).
  __builtin_prefetch(slot_address(first) + kPrefetchAheadSlots * kSlotBytes, 1, 3);
  run = ThreadRun{generation_, first + 1, first + size, epoch, size};
  return first;
}

bool JournalWriter::append_from_signal_handler(RecordType type, const void *payload, size_t bytes) noexcept {
  return append_impl(type, payload, bytes, false) != kNoSlot;
}

uint64_t JournalWriter::append_impl(RecordType type, const void *payload, size_t bytes, bool may_block) noexcept {
  if (!open_ || bytes > kMaxPayloadBytes || (full_.load(std::memory_order_relaxed) && !ends_something(type))) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return kNoSlot;
  }
  const size_t slots = slots_for(bytes);
  LG_ASSERT(slots >= 1 && slots <= kMaxSlotsPerRecord && slots * kSlotPayloadBytes >= bytes);
  const uint64_t first = next_slot_.fetch_add(slots, std::memory_order_relaxed);
  if (!room_for(type, first, slots, writable_slots_.load(std::memory_order_acquire), may_block)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return kNoSlot;
  }
  // Every slot of the record lies below what the file holds, in one run after `first`.
  LG_ASSERT(first + slots <= writable_slots_.load(std::memory_order_relaxed));
  const auto *source = static_cast<const unsigned char *>(payload);
  size_t remaining = bytes;
  for (size_t i = 0; i < slots; ++i) {
    unsigned char *slot = slot_address(first + i);  // a record may span two chunks
    size_t piece = remaining < kSlotPayloadBytes ? remaining : kSlotPayloadBytes;
    std::memcpy(slot + 4, source, piece);
    source += piece;
    remaining -= piece;
    LG_ASSERT(i + 1 < slots || remaining == 0);  // the payload ends in the record's last slot
    if (i > 0) {
      // Continuation tags first: a reader that finds the first tag committed must also find
      // these, and one that finds it zero skips them as orphans.
      __atomic_store_n(reinterpret_cast<uint32_t *>(slot), kContinuationTag, __ATOMIC_RELAXED);
    }
  }
  __atomic_store_n(reinterpret_cast<uint32_t *>(slot_address(first)), make_tag(type, slots), __ATOMIC_RELEASE);
  return first;
}

// --- The prefaulting thread ---------------------------------------------------------------------

void JournalWriter::start_prefaulting() noexcept {
  prefaulter_start_.store(kStartTried, std::memory_order_relaxed);  // asked once, whatever comes of it
  std::lock_guard lock(prefault_mutex_);
  if (!open_ || prefaulter_.joinable() || prefault_stop_) return;
  // Without a thread, the writers fault pages in themselves, as before one is started.
  if (prefaulter_.start("leaseguard-jrnl", kPrefaulterStackBytes, [this] { prefault_loop(); }))
    prefaulting_.store(true, std::memory_order_release);
}

void JournalWriter::stop_prefaulting() noexcept { join_prefaulter(true); }

void JournalWriter::suspend_prefaulting() noexcept { join_prefaulter(false); }

void JournalWriter::join_prefaulter(bool for_good) noexcept {
  {
    std::lock_guard lock(prefault_mutex_);
    prefault_stop_ = true;
    prefaulting_.store(false, std::memory_order_release);
    prefault_wake_.notify_all();
  }
  prefaulter_.join();
  std::lock_guard lock(prefault_mutex_);
  prefault_stopped_for_good_ = prefault_stopped_for_good_ || for_good;
  if (prefault_stopped_for_good_) return;
  prefault_stop_ = false;
  // The next writer that wants it starts it again (Tracker::on_alloc).
  if (prefaulter_start_.load(std::memory_order_relaxed) == kStartTried)
    prefaulter_start_.store(kStartNotYet, std::memory_order_relaxed);
}

// Without the mutex: an allocation may come from a signal handler that interrupted a thread
// holding it. A wake-up that slips between the thread's check and its wait is caught by the
// wait's time limit.
void JournalWriter::wake_prefaulter() noexcept { prefault_wake_.notify_all(); }

void JournalWriter::prefault_loop() noexcept {
  bool populate = prefault_by_ == PrefaultBy::Madvise;
  uint64_t populated = 0;  // slots faulted in so far (or written by the writers themselves)
  std::unique_lock lock(prefault_mutex_);
  while (!prefault_stop_) {
    prefault_wake_.wait_for(lock, std::chrono::milliseconds(20),
                            [this] { return prefault_stop_ || prefault_wanted_.load(std::memory_order_acquire); });
    if (prefault_stop_) break;
    if (!prefault_wanted_.load(std::memory_order_acquire)) continue;
    lock.unlock();
    prefault_pages(populate, populated);
    prefault_wanted_.store(false, std::memory_order_release);
    lock.lock();
  }
}

// Faults pages in as a write would, without writing: a writer that got there first keeps
// what it wrote. Kernels before 5.14 (and gVisor) refuse MADV_POPULATE_WRITE; then each page
// is touched for writing instead, within the blocks already allocated (a store past them
// would be answered by SIGBUS, where madvise returns an error). Chunk by chunk: chunks are
// not next to each other in memory.
void JournalWriter::prefault_pages(bool &populate, uint64_t &populated) noexcept {
  const uint64_t written = next_slot_.load(std::memory_order_relaxed);
  const uint64_t wanted = written + std::min(written, kPrefaultAheadSlots);
  if (!ensure_writable(wanted)) return;
  constexpr uint64_t kSlotsPerPage = kPageBytes / kSlotBytes;
  uint64_t from = std::max(populated, written) / kSlotsPerPage * kSlotsPerPage;
  const uint64_t to = std::min((wanted + kSlotsPerPage - 1) / kSlotsPerPage * kSlotsPerPage,
                               writable_slots_.load(std::memory_order_acquire) / kSlotsPerPage * kSlotsPerPage);
  while (from < to) {
    const uint64_t piece_end = std::min(to, (from / kChunkSlots + 1) * kChunkSlots);
    unsigned char *begin = slot_address(from);
    const size_t bytes = (piece_end - from) * kSlotBytes;
    if (populate && madvise(begin, bytes, kMadvisePopulateWrite) != 0 && errno == EINVAL) populate = false;
    if (!populate) touch_for_writing(begin, begin + bytes);
    from = piece_end;
  }
  populated = std::max(populated, wanted);
}

// A locked add of zero writes each page's first word with the value it holds, whatever a
// writer stores there meanwhile (a record's tag, stored atomically), so the page is faulted
// in for writing as a writer's store would fault it. In assembly: a compiler may turn an
// atomic add of zero into a load, which would fault the page in for reading only.
void JournalWriter::touch_for_writing(unsigned char *from, unsigned char *to) noexcept {
  for (unsigned char *page = from; page < to; page += kPageBytes) {
#if defined(__x86_64__)
    asm volatile("lock addl $0, %0" : "+m"(*reinterpret_cast<uint32_t *>(page)) : : "memory");
#else
    uint32_t seen = __atomic_load_n(reinterpret_cast<uint32_t *>(page), __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(reinterpret_cast<uint32_t *>(page), &seen, seen, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
#endif
  }
}

// --- Letting go ---------------------------------------------------------------------------------

void JournalWriter::abandon(bool close_descriptor) noexcept {
  const uint64_t mapped = mapped_slots_.load(std::memory_order_acquire);
  for (size_t index = 0; index < kMaxChunks && index * kChunkSlots < mapped; ++index) {
    if (const uintptr_t origin = chunk_origins_[index].exchange(0))
      munmap(reinterpret_cast<void *>(origin + index * kChunkBytes), kChunkBytes);
  }
  // Only a descriptor that is still the journal's: any other is the program's.
  if (close_descriptor && same_file(fd_, device_, inode_)) ::close(fd_);
  fd_ = -1;
  open_ = false;
  takes_any_.store(false);
  next_slot_.store(0);
  mapped_slots_.store(0);
  writable_slots_.store(0);
  grow_error_ = 0;
  full_.store(false);
  full_written_.store(false);
  full_error_.store(0);
}

}  // namespace leaseguard::journal
