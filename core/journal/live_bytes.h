// The journal's live view: what a running process holds on each device, read from its
// journal while the process writes it, with no message from the process per allocation. The
// lease authority's daemon and `leaseguard top` read live bytes this way (docs/lease-authority.md,
// "Metrics"). Slots are decoded as journal_reader.cpp decodes them (journal_format.h's tag_*).
//
// The journal is mapped read-only and shared, so each look sees what the writer committed,
// and only what is new since the last look is read: the records after the last one read,
// the places of the allocations still live (a free in place is stored into the allocation's
// own record), the last record (a compact journal writes an allocation over it), and slots
// that were still being written last time. The cost of a look is proportional to what
// changed and to the allocations live, never to the journal's length.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "journal_format.h"

namespace leaseguard::journal {

// A GPU's UUID as NVML and dcgm-exporter write it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
std::string gpu_uuid_text(const uint8_t (&uuid)[16]);

class LiveBytesReader {
 public:
  LiveBytesReader() = default;
  ~LiveBytesReader();
  LiveBytesReader(const LiveBytesReader &) = delete;
  LiveBytesReader &operator=(const LiveBytesReader &) = delete;

  // Opens the journal at `path`: a regular file (no symlink followed, no FIFO waited on)
  // that `owner` owns, so that a lease's process cannot have the daemon read another user's
  // files for it. False with `error`.
  bool open(const std::string &path, uid_t owner, std::string &error);
  // Reads what was committed since the last call.
  void update();
  // Live device-memory bytes per device (-1: unknown device), as of the last update.
  std::map<int, uint64_t> live_bytes_per_device() const;
  size_t live_allocations() const { return live_.size(); }
  // Device-memory bytes its last live check found lost (live at the check and not reachable),
  // of the allocations this reader knew live then; nullopt before any check.
  std::optional<uint64_t> lost_bytes_at_last_check() const { return last_check_lost_bytes_; }
  // The UUID of device ordinal `device` as NVML and dcgm-exporter write it ("GPU-" and five
  // groups of hex digits), from the process's Device records; "" where it did not say.
  std::string device_uuid(int device) const;
  // How many live checks it has seen.
  size_t checks() const { return checks_; }
  // The journal's bytes as mapped at the last open or update (whole slots).
  const unsigned char *bytes() const { return map_; }
  size_t size() const { return mapped_bytes_; }
  // The process wrote its end (ProcessEnd): nothing it holds will change.
  bool process_ended() const { return process_ended_; }
  // The process's answer to the teardown's reclaim request (journal::AuthorityReclaimPayload),
  // once it wrote it: what it gave back is then final.
  const std::optional<journal::AuthorityReclaimPayload> &reclaim_answer() const { return reclaim_answer_; }

 private:
  struct Live {
    uint64_t slot = 0;
    uint64_t bytes = 0;
    uint64_t context = 0;
    int device = -1;
    bool device_memory = false;
  };
  // The slot's first tag, 0 if out of the mapping.
  uint32_t tag_at(uint64_t slot) const;
  const unsigned char *payload_at(uint64_t slot) const;
  bool remap();
  bool read_allocation(uint64_t slot, journal::AllocPayload &alloc) const;
  // Applies the record whose first slot is `slot`; returns its slot count (1 if unreadable).
  size_t apply(uint64_t slot, uint32_t tag);
  void add_allocation(uint64_t slot);
  // A Check record (slots consecutive from `slot`): its first record starts a check (all it
  // holds live is lost), its reachable entries are taken off.
  void apply_check(uint64_t slot, size_t slots);

  int fd_ = -1;
  const unsigned char *map_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint64_t frontier_ = 1;     // the first slot not yet read (slot 0 is the header)
  uint64_t last_record_ = 0;  // the first slot of the last record read (0: none)
  uint64_t last_record_id_ = 0;
  std::set<uint64_t> pending_;               // slots before the frontier that were not yet committed
  std::set<uint64_t> freed_unseen_;          // ids freed while an earlier slot was pending
  std::unordered_map<uint64_t, Live> live_;  // by allocation id
  bool process_ended_ = false;
  std::optional<journal::AuthorityReclaimPayload> reclaim_answer_;
  std::optional<uint64_t> last_check_lost_bytes_;
  std::map<int, std::string> device_uuids_;
  uint64_t last_check_ns_ = 0;
  size_t checks_ = 0;
};

}  // namespace leaseguard::journal
