// Implementation of the journal writer (see journal_writer.h for why it is built this way).
#include "journal_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

#include "event_clock.h"
#include "log.h"

namespace leaseguard::journal {
namespace {

// The first chunk is small (2 MiB, sparse, mapped in ordinary pages), so a process that
// records little has a small file; later chunks are larger, because the page faults of fresh
// memory are what an append costs (see journal_writer.h), and fewer, larger extensions let
// the kernel map them in huge pages.
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kFirstChunkBytes = kHugePageBytes;
constexpr size_t kLaterChunkBytes = size_t{16} << 20;
constexpr size_t kReservedBytes = size_t{16} << 30;  // address space only: 268M records
constexpr int kMadvisePopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), not in older headers

size_t chunk_bytes_at(size_t offset) { return offset == 0 ? kFirstChunkBytes : kLaterChunkBytes; }

// Disk blocks are allocated in steps ahead of the writers: small ones while the journal is
// small, so that a program that records little takes little disk, then 2 MiB at a time.
constexpr size_t kSmallJournalBytes = size_t{1} << 20;
size_t allocation_step_at(size_t offset) { return offset < kSmallJournalBytes ? size_t{64} << 10 : kHugePageBytes; }

}  // namespace

JournalWriter::~JournalWriter() {
  stop_prefaulting();
  abandon();
}

void JournalWriter::start_prefaulting() noexcept {
  prefaulter_start_.store(kStartTried, std::memory_order_relaxed);  // asked once, whatever comes of it
  std::lock_guard lock(prefault_mutex_);
  if (base_ == nullptr || prefaulter_.joinable() || prefault_stop_) return;
  try {
    prefaulter_ = std::thread([this] { prefault_loop(); });
    prefaulting_.store(true, std::memory_order_release);
  } catch (...) {
    // No thread: the writers fault pages in themselves, as without one.
  }
}

void JournalWriter::stop_prefaulting() noexcept {
  std::thread prefaulter;
  {
    std::lock_guard lock(prefault_mutex_);
    prefault_stop_ = true;
    prefaulting_.store(false, std::memory_order_release);
    prefault_wake_.notify_all();
    prefaulter = std::move(prefaulter_);
  }
  if (prefaulter.joinable()) prefaulter.join();
}

// Without the mutex: an allocation may come from a signal handler that interrupted a thread
// holding it. A wake-up that slips between the thread's check and its wait is caught by the
// wait's time limit.
void JournalWriter::wake_prefaulter() noexcept { prefault_wake_.notify_all(); }

void JournalWriter::prefault_loop() noexcept {
#ifdef __linux__
  pthread_setname_np(pthread_self(), "leaseguard-jrnl");
#endif
  bool populate = prefault_by_ == PrefaultBy::Madvise;
  uint64_t populated = 0;  // slots faulted in so far (or written by the writers themselves)
  std::unique_lock lock(prefault_mutex_);
  while (!prefault_stop_) {
    prefault_wake_.wait_for(lock, std::chrono::milliseconds(20), [this] {
      return prefault_stop_ || prefault_wanted_.load(std::memory_order_acquire);
    });
    if (prefault_stop_) break;
    if (!prefault_wanted_.load(std::memory_order_acquire)) continue;
    lock.unlock();
    const uint64_t written = next_slot_.load(std::memory_order_relaxed);
    const uint64_t wanted = written + std::min(written, kPrefaultAheadSlots);
    if (ensure_writable(wanted)) {
      // Faults pages in as a write would, without writing: a writer that got there first
      // keeps what it wrote. Kernels before 5.14 (and gVisor) refuse it; then each page is
      // touched for writing instead, within the blocks already allocated (a store past
      // them would be answered by SIGBUS, where madvise returns an error).
      constexpr uint64_t kPage = 4096;  // madvise takes whole pages
      const uint64_t from = std::max(populated, written) * kSlotBytes / kPage * kPage;
      const uint64_t to = (wanted * kSlotBytes + kPage - 1) / kPage * kPage;
      if (populate && to > from &&
          madvise(base_ + from, to - from, kMadvisePopulateWrite) != 0 && errno == EINVAL)
        populate = false;
      if (!populate) {
        const uint64_t allocated = writable_slots_.load(std::memory_order_acquire) * kSlotBytes / kPage * kPage;
        if (std::min(to, allocated) > from) touch_for_writing(base_ + from, base_ + std::min(to, allocated));
      }
      populated = std::max(populated, wanted);
    }
    prefault_wanted_.store(false, std::memory_order_release);
    lock.lock();
  }
}

// A locked add of zero writes each page's first word with the value it holds, whatever a
// writer stores there meanwhile (a record's tag, stored atomically), so the page is faulted
// in for writing as a writer's store would fault it. In assembly: a compiler may turn an
// atomic add of zero into a load, which would fault the page in for reading only.
void JournalWriter::touch_for_writing(unsigned char *from, unsigned char *to) noexcept {
  constexpr uint64_t kPage = 4096;
  for (unsigned char *page = from; page < to; page += kPage) {
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

bool JournalWriter::open(const std::string &path, const HeaderPayload &header, std::string &error) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error = "cannot create journal " + path + ": " + std::strerror(errno);
    return false;
  }
  // One huge page more than needed, so the journal can start on a huge-page boundary: only
  // aligned file ranges can be mapped by huge pages.
  void *reserved = mmap(nullptr, kReservedBytes + kHugePageBytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    error = std::string("cannot reserve address space for the journal: ") + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    unlink(path.c_str());
    return false;
  }
  reservation_ = static_cast<unsigned char *>(reserved);
  reservation_bytes_ = kReservedBytes + kHugePageBytes;
  auto aligned = (reinterpret_cast<uintptr_t>(reserved) + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  base_ = reinterpret_cast<unsigned char *>(aligned);
  reserved_bytes_ = kReservedBytes;
  path_ = path;
  if (!ensure_writable(1)) {
    error = "cannot grow journal " + path + ": " + std::strerror(errno);
    abandon();
    unlink(path.c_str());
    return false;
  }
  append(RecordType::Header, &header, sizeof header);
  return true;
}

bool JournalWriter::ensure_writable(uint64_t slot_end, bool may_block) noexcept {
  if (slot_end <= writable_slots_.load(std::memory_order_acquire)) return true;
  std::unique_lock lock(grow_mutex_, std::defer_lock);
  if (may_block) lock.lock();
  else if (!lock.try_lock()) return false;
  uint64_t writable = writable_slots_.load(std::memory_order_relaxed);
  while (writable < slot_end) {
    if (grow_error_ != 0) return false;
    const size_t offset = writable * kSlotBytes;
    const size_t step = allocation_step_at(offset);
    if (!ensure_mapped(writable + step / kSlotBytes) || !allocate_blocks(offset, step)) {
      grow_error_ = errno != 0 ? errno : ENOSPC;
      full_error_.store(grow_error_, std::memory_order_relaxed);
      full_.store(true, std::memory_order_release);
      // Not from a signal handler (may_block false): formatting is not safe there.
      if (may_block)
        log_warning(
            "cannot grow the journal %s (%s): allocations from now on are tracked, and their leaks counted, but not "
            "listed in its report",
            path_.c_str(), std::strerror(grow_error_));
      return false;
    }
    writable += step / kSlotBytes;
    writable_slots_.store(writable, std::memory_order_release);
  }
  return true;
}

void JournalWriter::write_journal_full_once() noexcept {
  if (full_written_.exchange(true, std::memory_order_acq_rel)) return;
  JournalFullPayload full{};
  full.time_ns = monotonic_ns();  // clock_gettime: safe in a signal handler too
  full.error = full_error_.load(std::memory_order_relaxed);
  append_impl(RecordType::JournalFull, &full, sizeof full, false);
}

bool JournalWriter::allocate_blocks(size_t offset, size_t bytes) noexcept {
  if (fallocate(fd_, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) == 0) return true;
  if (errno != EOPNOTSUPP && errno != ENOSYS) return false;
  // A file system without fallocate: zeros written allocate the blocks, or fail as a
  // store into the mapping would not (with an error instead of SIGBUS). The range is past
  // everything written, so the zeros overwrite nothing.
  static const unsigned char zeros[64 << 10] = {};
  for (size_t done = 0; done < bytes;) {
    const size_t piece = std::min(bytes - done, sizeof zeros);
    const ssize_t wrote = pwrite(fd_, zeros, piece, static_cast<off_t>(offset + done));
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
    size_t offset = mapped * kSlotBytes;
    size_t chunk_bytes = chunk_bytes_at(offset);
    if (offset + chunk_bytes > reserved_bytes_) {
      errno = EFBIG;  // the most records a journal holds (kReservedBytes)
      return false;
    }
    if (ftruncate(fd_, static_cast<off_t>(offset + chunk_bytes)) != 0) return false;
    void *chunk = mmap(base_ + offset, chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                       fd_, static_cast<off_t>(offset));
    if (chunk == MAP_FAILED) return false;
    // A hint: where the file system supports large folios (ext4, xfs on recent kernels), a
    // first touch then maps 2 MiB at once instead of one 4 KiB page per fault. Not for the
    // first chunk: a huge folio is written back whole, and a program that records a few
    // allocations should leave a journal of a few pages on disk, not 2 MiB.
    if (offset != 0) madvise(chunk, chunk_bytes, MADV_HUGEPAGE);
    mapped += chunk_bytes / kSlotBytes;
    mapped_slots_.store(mapped, std::memory_order_release);
  }
  return true;
}

bool JournalWriter::append(RecordType type, const void *payload, size_t bytes) noexcept {
  return append_impl(type, payload, bytes, true) != kNoSlot;
}

bool JournalWriter::append_from_signal_handler(RecordType type, const void *payload, size_t bytes) noexcept {
  return append_impl(type, payload, bytes, false) != kNoSlot;
}

uint64_t JournalWriter::append_impl(RecordType type, const void *payload, size_t bytes, bool may_block) noexcept {
  if (base_ == nullptr || bytes > kMaxPayloadBytes || (full_.load(std::memory_order_relaxed) && !ends_something(type))) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return kNoSlot;
  }
  const size_t slots = slots_for(bytes);
  const uint64_t first = next_slot_.fetch_add(slots, std::memory_order_relaxed);
  if (!room_for(type, first, slots, writable_slots_.load(std::memory_order_acquire), may_block)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return kNoSlot;
  }
  const auto *source = static_cast<const unsigned char *>(payload);
  size_t remaining = bytes;
  for (size_t i = 0; i < slots; ++i) {
    unsigned char *slot = base_ + (first + i) * kSlotBytes;
    size_t piece = remaining < kSlotPayloadBytes ? remaining : kSlotPayloadBytes;
    std::memcpy(slot + 4, source, piece);
    source += piece;
    remaining -= piece;
    if (i > 0) {
      // Continuation tags first: a reader that finds the first tag committed must also find
      // these, and one that finds it zero skips them as orphans.
      __atomic_store_n(reinterpret_cast<uint32_t *>(slot), kContinuationTag, __ATOMIC_RELAXED);
    }
  }
  __atomic_store_n(reinterpret_cast<uint32_t *>(base_ + first * kSlotBytes), make_tag(type, slots),
                   __ATOMIC_RELEASE);
  return first;
}

void JournalWriter::abandon() noexcept {
  if (reservation_ != nullptr) munmap(reservation_, reservation_bytes_);
  reservation_ = nullptr;
  reservation_bytes_ = 0;
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
  reserved_bytes_ = 0;
  next_slot_.store(0);
  mapped_slots_.store(0);
  writable_slots_.store(0);
  grow_error_ = 0;
  full_.store(false);
  full_written_.store(false);
  full_error_.store(0);
}

}  // namespace leaseguard::journal
