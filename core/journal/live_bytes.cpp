#include "live_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "api_ids.h"
#include "journal_format.h"
#include "resource_rules.h"

namespace leaseguard::journal {

std::string gpu_uuid_text(const uint8_t (&uuid)[16]) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", uuid[0],
                uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9], uuid[10], uuid[11],
                uuid[12], uuid[13], uuid[14], uuid[15]);
  return text;
}

namespace {

// Zero slots in a row after which the rest of the file is taken for unwritten: more than
// the records all of a process's threads can have in flight at once, each in its run of
// slots (journal_writer.h: up to 32 a thread, given up to an Unused record when they stop).
constexpr uint64_t kUnwrittenRun = 4096;

template <typename Payload>
Payload payload_copy(const unsigned char *at) {
  Payload payload;
  std::memcpy(&payload, at, sizeof payload);
  return payload;
}

}  // namespace

LiveBytesReader::~LiveBytesReader() {
  if (map_ != nullptr) munmap(const_cast<unsigned char *>(map_), mapped_bytes_);
  if (fd_ >= 0) close(fd_);
}

bool LiveBytesReader::open(const std::string &path, uid_t owner, std::string &error) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat status {};
  if (fd_ < 0 || fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode) || status.st_uid != owner) {
    error = "cannot read journal " + path +
            (fd_ < 0 ? std::string(": ") + std::strerror(errno) : ": not a file of the lease's owner");
    return false;
  }
  if (!remap() || mapped_bytes_ < kSlotBytes || std::memcmp(payload_at(0), kFileMagic, sizeof kFileMagic) != 0) {
    error = path + " is not a leaseguard journal";
    return false;
  }
  return true;
}

bool LiveBytesReader::remap() {
  struct stat status {};
  if (fstat(fd_, &status) != 0) return false;
  const size_t size = static_cast<size_t>(status.st_size) / kSlotBytes * kSlotBytes;
  if (size == mapped_bytes_) return map_ != nullptr;
  if (map_ != nullptr) munmap(const_cast<unsigned char *>(map_), mapped_bytes_);
  map_ = nullptr;
  mapped_bytes_ = 0;
  if (size == 0) return false;
  void *mapped = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) return false;
  map_ = static_cast<const unsigned char *>(mapped);
  mapped_bytes_ = size;
  return true;
}

uint32_t LiveBytesReader::tag_at(uint64_t slot) const {
  if (map_ == nullptr || (slot + 1) * kSlotBytes > mapped_bytes_) return 0;
  return __atomic_load_n(reinterpret_cast<const uint32_t *>(map_ + slot * kSlotBytes), __ATOMIC_ACQUIRE);
}

const unsigned char *LiveBytesReader::payload_at(uint64_t slot) const { return map_ + slot * kSlotBytes + 4; }

bool LiveBytesReader::read_allocation(uint64_t slot, AllocPayload &alloc) const {
  // A compact journal's writer may be writing over this record (its tag cleared first, set
  // again last): a copy taken while the tag stayed the same is whole.
  const uint32_t before = tag_at(slot);
  if (before != make_tag(RecordType::Alloc, 1)) return false;
  alloc = payload_copy<AllocPayload>(payload_at(slot));
  return tag_at(slot) == before;
}

void LiveBytesReader::add_allocation(uint64_t slot) {
  AllocPayload alloc;
  if (!read_allocation(slot, alloc) || alloc.freed_in_place != 0 || freed_unseen_.erase(alloc.id) > 0) return;
  const Kind kind = static_cast<Kind>(alloc.kind);
  live_[alloc.id] = Live{slot, alloc.bytes, alloc.context, alloc.device, holds_device_memory(kind)};
}

size_t LiveBytesReader::apply(uint64_t slot, uint32_t tag) {
  const size_t slots = tag_slots(tag);
  const RecordType type = tag_type(tag);
  if (slots == 0 || (slot + slots) * kSlotBytes > mapped_bytes_) return 1;
  if (type == RecordType::Check) {
    apply_check(slot, slots);
    return slots;
  }
  if (slots != 1) return slots;  // what else matters here fits one slot
  switch (type) {
    case RecordType::Unused: {  // a thread's run given up: the slots it names are never written
      const auto unused = payload_copy<UnusedPayload>(payload_at(slot));
      return 1 + std::min<uint64_t>(unused.slots, mapped_bytes_ / kSlotBytes - slot - 1);
    }
    case RecordType::Alloc: add_allocation(slot); break;
    case RecordType::Free: {
      const auto free = payload_copy<FreePayload>(payload_at(slot));
      if ((free.flags & (kFreeUnknown | kFreeLate)) != 0 || free.id == 0) break;
      if ((free.flags & kFreeReclaimed) != 0 && free.status != 0) break;  // the driver refused: still held
      if (live_.erase(free.id) == 0 && !pending_.empty()) freed_unseen_.insert(free.id);
      break;
    }
    case RecordType::ContextDestroy: {
      // Allocations made in the context before its destroy began went with it.
      const auto destroy = payload_copy<ContextDestroyPayload>(payload_at(slot));
      for (auto it = live_.begin(); it != live_.end();)
        it = it->second.context == destroy.context &&
                     (destroy.begun_at_slot == 0 || it->second.slot < destroy.begun_at_slot)
                 ? live_.erase(it)
                 : std::next(it);
      break;
    }
    case RecordType::ProcessEnd: process_ended_ = true; break;
    case RecordType::Device: {
      const auto device = payload_copy<DevicePayload>(payload_at(slot));
      if (std::any_of(std::begin(device.uuid), std::end(device.uuid), [](uint8_t byte) { return byte != 0; }))
        device_uuids_[device.device] = gpu_uuid_text(device.uuid);
      break;
    }
    case RecordType::AuthorityReclaim: reclaim_answer_ = payload_copy<AuthorityReclaimPayload>(payload_at(slot)); break;
    default: break;
  }
  return 1;
}

std::string LiveBytesReader::device_uuid(int device) const {
  auto found = device_uuids_.find(device);
  return found != device_uuids_.end() ? found->second : "";
}

void LiveBytesReader::update() {
  if (fd_ < 0) return;
  remap();
  // Allocations freed in place since: the free is stored into their own record.
  for (auto it = live_.begin(); it != live_.end();) {
    const uint64_t slot = it->second.slot;
    const bool freed = tag_at(slot) != make_tag(RecordType::Alloc, 1) ||
                       __atomic_load_n(reinterpret_cast<const uint32_t *>(payload_at(slot) + kFreedInPlaceOffset),
                                       __ATOMIC_ACQUIRE) != 0 ||
                       payload_copy<AllocPayload>(payload_at(slot)).id != it->first;
    it = freed ? live_.erase(it) : std::next(it);
  }
  // The last record read may have been written over with a new allocation (compact journals).
  if (AllocPayload alloc; last_record_ != 0 && read_allocation(last_record_, alloc)) {
    if (alloc.id != last_record_id_) {
      last_record_id_ = alloc.id;
      add_allocation(last_record_);
    }
  }
  // Slots that were being written last time, in journal order.
  for (auto it = pending_.begin(); it != pending_.end();) {
    const uint32_t tag = tag_at(*it);
    if (!is_leaseguard_tag(tag)) {
      ++it;
      continue;
    }
    const uint64_t first = *it;
    const size_t applied = tag != kContinuationTag ? apply(first, tag) : 1;
    it = pending_.erase(it);
    // An Unused record: the slots it names will never be written, so nothing waits on them.
    if (tag_type(tag) == RecordType::Unused) it = pending_.erase(it, pending_.lower_bound(first + applied));
  }
  if (pending_.empty()) freed_unseen_.clear();
  // What is new.
  uint64_t slot = frontier_, zeros = 0;
  const uint64_t slot_count = mapped_bytes_ / kSlotBytes;
  while (slot < slot_count && zeros < kUnwrittenRun) {
    const uint32_t tag = tag_at(slot);
    if (tag == 0) {
      ++zeros;
      ++slot;
      continue;
    }
    for (uint64_t gap = slot - zeros; gap < slot; ++gap) pending_.insert(gap);
    zeros = 0;
    if (!is_leaseguard_tag(tag) || tag == kContinuationTag) {
      ++slot;
      continue;
    }
    last_record_ = slot;
    AllocPayload alloc;
    last_record_id_ = read_allocation(slot, alloc) ? alloc.id : 0;
    slot += apply(slot, tag);
  }
  frontier_ = slot - zeros;
}

void LiveBytesReader::apply_check(uint64_t slot, size_t slots) {
  // The payload is the slots' payload areas end to end (journal_format.h).
  std::vector<unsigned char> payload(slots * kSlotPayloadBytes);
  for (size_t i = 0; i < slots; ++i) {
    if (i != 0 && tag_at(slot + i) != kContinuationTag) return;  // not whole: skipped, as a reader skips it
    std::memcpy(payload.data() + i * kSlotPayloadBytes, payload_at(slot + i), kSlotPayloadBytes);
  }
  ReachabilityPayload head;
  std::memcpy(&head, payload.data(), sizeof head);
  if (sizeof head + uint64_t{head.count} * 8 > payload.size()) return;
  if (!last_check_lost_bytes_ || head.time_ns != last_check_ns_) {
    uint64_t live_bytes = 0;
    for (const auto &[id, live] : live_)
      if (live.device_memory) live_bytes += live.bytes;
    last_check_lost_bytes_ = live_bytes;
    last_check_ns_ = head.time_ns;
    ++checks_;
  }
  constexpr uint64_t kIdMask = (uint64_t{1} << kReachabilityClassShift) - 1;
  for (uint32_t i = 0; i < head.count; ++i) {
    uint64_t entry;
    std::memcpy(&entry, payload.data() + sizeof head + i * 8, sizeof entry);
    if ((entry >> kReachabilityClassShift) != kReachabilityClassReachable) continue;
    auto live = live_.find(entry & kIdMask);
    if (live == live_.end() || !live->second.device_memory) continue;
    *last_check_lost_bytes_ -= std::min(*last_check_lost_bytes_, live->second.bytes);
  }
}

std::map<int, uint64_t> LiveBytesReader::live_bytes_per_device() const {
  std::map<int, uint64_t> bytes;
  for (const auto &[id, live] : live_)
    if (live.device_memory) bytes[live.device] += live.bytes;
  return bytes;
}

}  // namespace leaseguard::journal
