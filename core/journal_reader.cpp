// Implementation of the journal reader.
#include "journal_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

bool dispatch(RecordType type, const std::vector<unsigned char> &payload, JournalVisitor &visitor,
              ReadStats &stats) {
  switch (type) {
    case RecordType::Header: {
      HeaderPayload header;
      if (!load(payload, header)) return false;
      visitor.on_header(header);
      return true;
    }
    case RecordType::Process: {
      ProcessPayload process;
      if (!load(payload, process)) return false;
      if (process.command_bytes > payload.size() - sizeof process) return false;
      ProcessInfo info;
      info.pid = process.pid;
      info.ppid = process.ppid;
      const char *text = reinterpret_cast<const char *>(payload.data() + sizeof process);
      size_t position = 0;
      bool first = true;
      while (position < process.command_bytes) {
        size_t length = strnlen(text + position, process.command_bytes - position);
        std::string part(text + position, length);
        if (first) info.executable = std::move(part);
        else info.argv.push_back(std::move(part));
        first = false;
        position += length + 1;
      }
      visitor.on_process(info);
      return true;
    }
    case RecordType::Module: {
      ModulePayload module;
      if (!load(payload, module)) return false;
      size_t available = payload.size() - sizeof module;
      if (module.build_id_bytes > available || module.path_bytes > available - module.build_id_bytes)
        return false;
      ModuleInfo info;
      info.module_id = module.module_id;
      info.base = module.base;
      const unsigned char *extra = payload.data() + sizeof module;
      info.build_id = hex(extra, module.build_id_bytes);
      info.path.assign(reinterpret_cast<const char *>(extra + module.build_id_bytes), module.path_bytes);
      visitor.on_module(info);
      return true;
    }
    case RecordType::Stack: {
      StackPayload stack;
      if (!load(payload, stack)) return false;
      if (stack.depth > (payload.size() - sizeof stack) / sizeof(StackFrame)) return false;
      std::vector<StackFrame> frames(stack.depth);
      if (stack.depth > 0)
        std::memcpy(frames.data(), payload.data() + sizeof stack, stack.depth * sizeof(StackFrame));
      visitor.on_stack(stack.stack_id, frames);
      return true;
    }
    case RecordType::Alloc: {
      AllocPayload alloc;
      if (!load(payload, alloc)) return false;
      visitor.on_alloc(alloc);
      return true;
    }
    case RecordType::Free: {
      FreePayload free_record;
      if (!load(payload, free_record)) return false;
      visitor.on_free(free_record);
      return true;
    }
    case RecordType::LeaseBegin: {
      LeaseBeginPayload begin;
      if (!load(payload, begin)) return false;
      if (begin.name_bytes > payload.size() - sizeof begin) return false;
      visitor.on_lease_begin(begin, std::string_view(reinterpret_cast<const char *>(payload.data() + sizeof begin),
                                                     begin.name_bytes));
      return true;
    }
    case RecordType::LeaseEnd: {
      LeaseEndPayload end;
      if (!load(payload, end)) return false;
      visitor.on_lease_end(end);
      return true;
    }
    case RecordType::ContextDestroy: {
      ContextDestroyPayload destroy;
      if (!load(payload, destroy)) return false;
      visitor.on_context_destroy(destroy);
      return true;
    }
    case RecordType::ProcessEnd: {
      ProcessEndPayload end;
      if (!load(payload, end)) return false;
      visitor.on_process_end(end);
      return true;
    }
    case RecordType::PoolDestroy: {
      PoolDestroyPayload destroy;
      if (!load(payload, destroy)) return false;
      visitor.on_pool_destroy(destroy);
      return true;
    }
    case RecordType::Recycled: {
      RecycledPayload recycled;
      if (!load(payload, recycled)) return false;
      visitor.on_recycled(recycled);
      return true;
    }
    case RecordType::JournalFull: {
      JournalFullPayload full;
      if (!load(payload, full)) return false;
      visitor.on_journal_full(full);
      return true;
    }
    case RecordType::Continuation:
      return true;
  }
  ++stats.unknown_records;
  return true;
}

}  // namespace

bool read_journal_bytes(const unsigned char *data, size_t size, JournalVisitor &visitor,
                        ReadStats &stats, std::string &error) {
  stats = ReadStats{};
  const size_t slot_count = size / kSlotBytes;
  stats.truncated_bytes = size % kSlotBytes;
  auto tag_at = [&](size_t slot) {
    uint32_t tag;
    std::memcpy(&tag, data + slot * kSlotBytes, sizeof tag);
    return tag;
  };
  if (slot_count == 0 || tag_at(0) != make_tag(RecordType::Header, 1)) {
    error = "not a leaseguard journal (no header)";
    return false;
  }
  HeaderPayload header;
  std::memcpy(&header, data + 4, sizeof header);
  if (std::memcmp(header.magic, kFileMagic, sizeof kFileMagic) != 0) {
    error = "not a leaseguard journal (bad magic)";
    return false;
  }
  if (header.version < kOldestReadableVersion || header.version > kVersion || header.slot_bytes != kSlotBytes) {
    error = "journal version " + std::to_string(header.version) + " is not supported (this leaseguard reads versions " +
            std::to_string(kOldestReadableVersion) + " to " + std::to_string(kVersion) + ")";
    return false;
  }

  std::vector<unsigned char> payload;
  size_t slot = 0;
  while (slot < slot_count) {
    uint32_t tag = tag_at(slot);
    if (tag == 0) {
      ++stats.uncommitted_slots;
      ++slot;
      continue;
    }
    if ((tag & kTagMagicMask) != kTagMagic) {
      ++stats.corrupt_slots;
      ++slot;
      continue;
    }
    auto type = static_cast<RecordType>((tag >> 8) & 0xFF);
    size_t slots = tag & 0xFF;
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
    bool continuations_ok = true;
    for (size_t i = 1; i < slots; ++i) continuations_ok = continuations_ok && tag_at(slot + i) == kContinuationTag;
    if (!continuations_ok) {
      ++stats.malformed_records;
      ++slot;
      continue;
    }
    payload.resize(slots * kSlotPayloadBytes);
    for (size_t i = 0; i < slots; ++i)
      std::memcpy(payload.data() + i * kSlotPayloadBytes, data + (slot + i) * kSlotBytes + 4, kSlotPayloadBytes);
    visitor.record_slot_ = slot;
    if (dispatch(type, payload, visitor, stats)) ++stats.records;
    else ++stats.malformed_records;
    slot += slots;
  }
  return true;
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

bool read_journal(const std::string &path, JournalVisitor &visitor, ReadStats &stats, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat status;
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    error = path + " is not a regular file";
    ::close(fd);
    return false;
  }
  if (status.st_size == 0) {
    ::close(fd);
    error = path + ": not a leaseguard journal (empty file)";
    return false;
  }
  // Read, not mapped: on a full tmpfs a fault on a hole of a mapping allocates a page, and
  // failing, kills the reader with SIGBUS; read(2) gives the hole's zeros.
  const size_t size = end_of_data(fd, static_cast<size_t>(status.st_size));
  std::vector<unsigned char> bytes;
  try {
    bytes.resize(size);
  } catch (...) {
    ::close(fd);
    error = "cannot read " + path + ": out of memory";
    return false;
  }
  for (size_t done = 0; done < size;) {
    const ssize_t got = pread(fd, bytes.data() + done, size - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      error = "cannot read " + path + ": " + (got < 0 ? std::strerror(errno) : "the file shrank");
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  if (size == 0) {
    error = path + ": not a leaseguard journal (no data)";
    return false;
  }
  bool ok = read_journal_bytes(bytes.data(), size, visitor, stats, error);
  if (!ok) error = path + ": " + error;
  return ok;
}

}  // namespace leaseguard::journal
