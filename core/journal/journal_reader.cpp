// Implementation of the journal reader.
#include "journal_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "files.h"
#include "writer_liveness.h"
#include "options.h"

namespace leaseguard::journal {
namespace {

template <typename T>
bool load(const std::vector<unsigned char> &payload, T &out) {
  if (payload.size() < sizeof(T)) return false;
  std::memcpy(&out, payload.data(), sizeof(T));
  return true;
}

std::string hex(const unsigned char *data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    text.push_back(digits[data[i] >> 4]);
    text.push_back(digits[data[i] & 15]);
  }
  return text;
}

// The records with a payload of fixed shape: loaded whole, handed to the visitor as they are.
template <typename Payload, typename Visit>
bool visit_fixed(const std::vector<unsigned char> &payload, Visit visit) {
  Payload record;
  if (!load(payload, record)) return false;
  visit(record);
  return true;
}

// A process's end: 16 bytes in journals before `drivers`, read with it 0 (not known).
bool visit_process_end(const std::vector<unsigned char> &payload, JournalVisitor &visitor) {
  ProcessEndPayload end{};
  if (payload.size() < kProcessEndFirstBytes) return false;
  std::memcpy(&end, payload.data(), std::min(payload.size(), sizeof end));
  visitor.on_process_end(end);
  return true;
}

// Followed by the executable's path and each argument, each NUL-terminated.
bool visit_process(const std::vector<unsigned char> &payload, JournalVisitor &visitor) {
  ProcessPayload process;
  if (!load(payload, process) || process.command_bytes > payload.size() - sizeof process) return false;
  ProcessInfo info;
  info.pid = process.pid;
  info.ppid = process.ppid;
  const char *text = reinterpret_cast<const char *>(payload.data() + sizeof process);
  for (size_t position = 0; position < process.command_bytes;) {
    const size_t length = strnlen(text + position, process.command_bytes - position);
    std::string part(text + position, length);
    if (position == 0) info.executable = std::move(part);
    else info.argv.push_back(std::move(part));
    position += length + 1;
  }
  visitor.on_process(info);
  return true;
}

// Followed by the build-id, then the path.
bool visit_module(const std::vector<unsigned char> &payload, JournalVisitor &visitor) {
  ModulePayload module;
  if (!load(payload, module)) return false;
  const size_t available = payload.size() - sizeof module;
  if (module.build_id_bytes > available || module.path_bytes > available - module.build_id_bytes) return false;
  // Longer than a path can be (PATH_MAX) or than a build-id is: made by hand, and a path is
  // copied into every report frame in the module.
  if (module.path_bytes > 4096 || module.build_id_bytes > 64) return false;
  ModuleInfo info;
  info.module_id = module.module_id;
  info.base = module.base;
  const unsigned char *extra = payload.data() + sizeof module;
  info.build_id = hex(extra, module.build_id_bytes);
  info.path.assign(reinterpret_cast<const char *>(extra + module.build_id_bytes), module.path_bytes);
  visitor.on_module(info);
  return true;
}

// Followed by its frames.
bool visit_stack(const std::vector<unsigned char> &payload, JournalVisitor &visitor) {
  StackPayload stack;
  if (!load(payload, stack)) return false;
  if (stack.depth > (payload.size() - sizeof stack) / sizeof(StackFrame)) return false;
  // Deeper than a stack is ever recorded: made by hand, and each frame would be rendered
  // with its module's path in every leak that names the stack.
  if (stack.depth > static_cast<uint32_t>(kMaxStackDepth)) return false;
  std::vector<StackFrame> frames(stack.depth);
  if (stack.depth > 0) std::memcpy(frames.data(), payload.data() + sizeof stack, stack.depth * sizeof(StackFrame));
  visitor.on_stack(stack.stack_id, frames);
  return true;
}

// Followed by the lease's name.
bool visit_lease_begin(const std::vector<unsigned char> &payload, JournalVisitor &visitor) {
  LeaseBeginPayload begin;
  if (!load(payload, begin) || begin.name_bytes > payload.size() - sizeof begin) return false;
  visitor.on_lease_begin(
      begin, std::string_view(reinterpret_cast<const char *>(payload.data() + sizeof begin), begin.name_bytes));
  return true;
}

// Followed by its entries.
bool visit_reachability(const std::vector<unsigned char> &payload, JournalVisitor &visitor, bool check) {
  ReachabilityPayload head;
  if (!load(payload, head) || head.count > (payload.size() - sizeof head) / 8) return false;
  std::vector<uint64_t> entries(head.count);
  if (head.count > 0) std::memcpy(entries.data(), payload.data() + sizeof head, head.count * 8);
  if (check) visitor.on_check(head, entries.data());
  else visitor.on_reachability(head, entries.data());
  return true;
}

// False if the record's payload does not parse (a malformed record).
bool dispatch(RecordType type, const std::vector<unsigned char> &payload, JournalVisitor &visitor, ReadStats &stats) {
  auto to = [&visitor](auto member) { return [&visitor, member](const auto &record) { (visitor.*member)(record); }; };
  switch (type) {
    case RecordType::Header: return visit_fixed<HeaderPayload>(payload, to(&JournalVisitor::on_header));
    case RecordType::Process: return visit_process(payload, visitor);
    case RecordType::Module: return visit_module(payload, visitor);
    case RecordType::Stack: return visit_stack(payload, visitor);
    case RecordType::Alloc: return visit_fixed<AllocPayload>(payload, to(&JournalVisitor::on_alloc));
    case RecordType::Free: return visit_fixed<FreePayload>(payload, to(&JournalVisitor::on_free));
    case RecordType::LeaseBegin: return visit_lease_begin(payload, visitor);
    case RecordType::LeaseEnd: return visit_fixed<LeaseEndPayload>(payload, to(&JournalVisitor::on_lease_end));
    case RecordType::ContextDestroy:
      return visit_fixed<ContextDestroyPayload>(payload, to(&JournalVisitor::on_context_destroy));
    case RecordType::ProcessEnd: return visit_process_end(payload, visitor);
    case RecordType::PoolDestroy: return visit_fixed<PoolDestroyPayload>(payload, to(&JournalVisitor::on_pool_destroy));
    case RecordType::Recycled: return visit_fixed<RecycledPayload>(payload, to(&JournalVisitor::on_recycled));
    case RecordType::JournalFull: return visit_fixed<JournalFullPayload>(payload, to(&JournalVisitor::on_journal_full));
    case RecordType::Reachability: return visit_reachability(payload, visitor, false);
    case RecordType::Check: return visit_reachability(payload, visitor, true);
    case RecordType::UnjournaledLeaks:
      return visit_fixed<UnjournaledLeaksPayload>(payload, to(&JournalVisitor::on_unjournaled_leaks));
    case RecordType::Signal: return visit_fixed<SignalPayload>(payload, to(&JournalVisitor::on_signal));
    case RecordType::AuthorityReclaim:
      return visit_fixed<AuthorityReclaimPayload>(payload, to(&JournalVisitor::on_authority_reclaim));
    case RecordType::Device: return visit_fixed<DevicePayload>(payload, to(&JournalVisitor::on_device));
    case RecordType::Continuation: return true;
    case RecordType::Unused: return true;  // read_slots skips what it names
  }
  ++stats.unknown_records;
  return true;
}

}  // namespace

// Where the reader takes slots from: all of them in memory, or a window onto a file that
// moves forward through it.
class SlotSource {
 public:
  virtual ~SlotSource() = default;
  // Slots [first, first + count) (count at most a record's, kMaxSlotsPerRecord), contiguous;
  // nullptr if they could not be read (then error() says why).
  virtual const unsigned char *slots(size_t first, size_t count) = 0;
  const std::string &error() const { return error_; }

 protected:
  std::string error_;
};

namespace {

class MemorySlots final : public SlotSource {
 public:
  explicit MemorySlots(const unsigned char *data) : data_(data) {}
  const unsigned char *slots(size_t first, size_t) override { return data_ + first * kSlotBytes; }

 private:
  const unsigned char *data_;
};

// Reads `window_slots` slots at a time: the reader's memory stays that, whatever the
// journal's size. The reader only moves forward, so a window is refilled from the first
// slot asked for that it does not hold.
class FileSlots final : public SlotSource {
 public:
  FileSlots(int fd, size_t slot_count, size_t window_slots)
      : fd_(fd), slot_count_(slot_count), window_slots_(std::min(window_slots, slot_count)) {}

  bool allocate() {
    try {
      window_.resize(window_slots_ * kSlotBytes);
      return true;
    } catch (...) {
      error_ = "out of memory";
      return false;
    }
  }

  const unsigned char *slots(size_t first, size_t count) override {
    if (first < base_ || first + count > base_ + held_) {
      if (!fill_from(first)) return nullptr;
      if (first + count > base_ + held_) {
        error_ = "the file shrank";
        return nullptr;
      }
    }
    return window_.data() + (first - base_) * kSlotBytes;
  }

 private:
  bool fill_from(size_t first) {
    base_ = first;
    held_ = 0;
    const size_t wanted = std::min(window_slots_, slot_count_ - first) * kSlotBytes;
    size_t done = 0;
    while (done < wanted) {
      const ssize_t got =
          pread(fd_, window_.data() + done, wanted - done, static_cast<off_t>(first * kSlotBytes + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        error_ = std::strerror(errno);
        return false;
      }
      if (got == 0) break;  // the file shrank: what was read is still whole slots' worth
      done += static_cast<size_t>(got);
    }
    held_ = done / kSlotBytes;
    return true;
  }

  int fd_;
  size_t slot_count_;
  size_t window_slots_;
  std::vector<unsigned char> window_;
  size_t base_ = 0;  // the first slot in the window
  size_t held_ = 0;  // how many slots it holds
};

}  // namespace

// The reader proper, over any source of `slot_count` whole slots.
namespace {

uint32_t tag_in(const unsigned char *slot) {
  uint32_t tag;
  std::memcpy(&tag, slot, sizeof tag);
  return tag;
}

// Checks the header in the first slot: a journal of a version this reader reads. A header
// whose tag is gone but whose payload is whole makes a damaged journal, read for what it
// holds and reported as damaged, never as an empty one (report_loader.cpp tells an empty
// journal, which has no committed record at all, apart).
bool check_header(SlotSource &source, size_t slot_count, ReadStats &stats, std::string &error) {
  const unsigned char *first = slot_count != 0 ? source.slots(0, 1) : nullptr;
  if (slot_count != 0 && first == nullptr) {
    error = "cannot read: " + source.error();
    return false;
  }
  if (slot_count == 0) {
    error = "not a leaseguard journal (no header)";
    return false;
  }
  HeaderPayload header;
  std::memcpy(&header, first + 4, sizeof header);
  const bool committed = tag_in(first) == make_tag(RecordType::Header, 1);
  const bool magic = std::memcmp(header.magic, kFileMagic, sizeof kFileMagic) == 0;
  if (!committed && magic && tag_in(first) == 0) {
    stats.damaged_header = true;
  } else if (!committed || !magic) {
    error = !committed ? "not a leaseguard journal (no header)" : "not a leaseguard journal (bad magic)";
    return false;
  }
  if (header.version < kOldestReadableVersion || header.version > kVersion) {
    error = "journal version " + std::to_string(header.version) + " is not supported (this leaseguard reads versions " +
            std::to_string(kOldestReadableVersion) + " to " + std::to_string(kVersion) + ")";
    return false;
  }
  if (header.slot_bytes != kSlotBytes) {
    error = "damaged journal: its header says slots of " + std::to_string(header.slot_bytes) +
            " bytes, and every version's are " + std::to_string(kSlotBytes);
    return false;
  }
  return true;
}

}  // namespace

bool read_slots(SlotSource &source, size_t slot_count, JournalVisitor &visitor, ReadStats &stats, std::string &error) {
  if (!check_header(source, slot_count, stats, error)) return false;
  std::vector<unsigned char> payload;
  size_t slot = 0, next_progress = 0;
  while (slot < slot_count) {
    if (slot >= next_progress) {
      visitor.on_progress(slot, slot_count);
      next_progress = slot + 65536;
    }
    const unsigned char *at = source.slots(slot, 1);
    if (at == nullptr) break;
    uint32_t tag = tag_in(at);
    if (tag == 0) {
      ++stats.uncommitted_slots;
      ++slot;
      continue;
    }
    if (!is_leaseguard_tag(tag)) {
      ++stats.corrupt_slots;
      ++slot;
      continue;
    }
    const RecordType type = tag_type(tag);
    const size_t slots = tag_slots(tag);
    if (type == RecordType::Continuation) {
      ++stats.uncommitted_slots;  // its record's first slot was never committed
      ++slot;
      continue;
    }
    if (slots == 0 || slots > slot_count - slot) {
      ++stats.corrupt_slots;
      ++slot;
      continue;
    }
    if (type == RecordType::Unused && slots == 1) {
      // A thread's run given up: the slots it names were never written.
      UnusedPayload unused;
      std::memcpy(&unused, at + 4, sizeof unused);
      ++stats.records;
      slot += 1 + std::min<uint64_t>(unused.slots, slot_count - slot - 1);
      continue;
    }
    at = source.slots(slot, slots);
    if (at == nullptr) break;
    bool continuations_ok = true;
    for (size_t i = 1; i < slots; ++i)
      continuations_ok = continuations_ok && tag_in(at + i * kSlotBytes) == kContinuationTag;
    if (!continuations_ok) {
      ++stats.malformed_records;
      ++slot;
      continue;
    }
    payload.resize(slots * kSlotPayloadBytes);
    for (size_t i = 0; i < slots; ++i)
      std::memcpy(payload.data() + i * kSlotPayloadBytes, at + i * kSlotBytes + 4, kSlotPayloadBytes);
    visitor.record_slot_ = slot;
    if (dispatch(type, payload, visitor, stats)) ++stats.records;
    else ++stats.malformed_records;
    slot += slots;
  }
  if (slot < slot_count) {
    error = "cannot read: " + source.error();
    return false;
  }
  return true;
}

bool read_journal_bytes(const unsigned char *data, size_t size, JournalVisitor &visitor, ReadStats &stats,
                        std::string &error) {
  stats = ReadStats{};
  stats.truncated_bytes = size % kSlotBytes;
  MemorySlots source(data);
  return read_slots(source, size / kSlotBytes, visitor, stats, error);
}

// Where the file's last data ends: past it there are only holes (the unwritten end of the
// journal's last chunk), read as zeros. Where the file system cannot say, its size.
static size_t end_of_data(int fd, size_t size) {
  size_t end = 0;
  for (off_t at = 0;;) {
    const off_t data = lseek(fd, at, SEEK_DATA);
    if (data < 0) return errno == ENXIO ? end : size;
    const off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return size;
    end = static_cast<size_t>(hole);
    at = hole;
  }
}

bool read_journal(const std::string &path, JournalVisitor &visitor, ReadStats &stats, std::string &error,
                  size_t window_slots) {
  // Never a FIFO or a device: opening one could block forever (files.h).
  struct stat status {};
  const int fd = open_regular_file(path, error, &status);
  if (fd < 0) return false;
  if (status.st_size == 0) {
    ::close(fd);
    error = path + ": not a leaseguard journal (empty file)";
    return false;
  }
  // Read, not mapped: on a full tmpfs a fault on a hole of a mapping allocates a page, and
  // failing, kills the reader with SIGBUS; read(2) gives the hole's zeros.
  // A file that fits one window is read whole: its holes read as zeros, which the reader
  // skips, and the search for them would cost a directory of small journals three system
  // calls each.
  const size_t window = std::max(window_slots, kMaxSlotsPerRecord);
  const size_t file_size = static_cast<size_t>(status.st_size);
  const size_t size = file_size <= window * kSlotBytes ? file_size : end_of_data(fd, file_size);
  if (size == 0) {
    ::close(fd);
    error = path + ": not a leaseguard journal (no data)";
    return false;
  }
  stats = ReadStats{};
  stats.truncated_bytes = size % kSlotBytes;
  FileSlots source(fd, size / kSlotBytes, window);
  bool ok = source.allocate() && read_slots(source, size / kSlotBytes, visitor, stats, error);
  if (!ok && error.empty()) error = "cannot read: " + source.error();
  stats.writer_running = writer_running_on(fd);
  ::close(fd);
  if (!ok) error = path + ": " + error;
  return ok;
}

}  // namespace leaseguard::journal
