// Reads a journal written by JournalWriter and hands each committed record to a visitor,
// in journal order. Damage never stops the reader: zero tags (records a killed process had
// not committed), orphaned continuation slots and malformed records are skipped and counted,
// so a truncated or corrupted journal still yields everything that was whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "journal_format.h"

namespace leaseguard::journal {

struct ProcessInfo {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string executable;
  std::vector<std::string> argv;
};

struct ModuleInfo {
  uint32_t module_id = 0;
  uint64_t base = 0;
  std::string path;
  std::string build_id;  // lowercase hex, empty if none
};

struct ReadStats;
class SlotSource;  // where the reader takes slots from (journal_reader.cpp)

class JournalVisitor {
 public:
  virtual ~JournalVisitor() = default;
  virtual void on_header(const HeaderPayload &) {}
  virtual void on_process(const ProcessInfo &) {}
  virtual void on_module(const ModuleInfo &) {}
  virtual void on_stack(uint32_t /*stack_id*/, const std::vector<StackFrame> &) {}
  virtual void on_alloc(const AllocPayload &) {}
  virtual void on_free(const FreePayload &) {}
  virtual void on_lease_begin(const LeaseBeginPayload &, std::string_view /*name*/) {}
  virtual void on_lease_end(const LeaseEndPayload &) {}
  virtual void on_context_destroy(const ContextDestroyPayload &) {}
  virtual void on_process_end(const ProcessEndPayload &) {}
  virtual void on_pool_destroy(const PoolDestroyPayload &) {}
  virtual void on_recycled(const RecycledPayload &) {}
  virtual void on_journal_full(const JournalFullPayload &) {}
  virtual void on_unjournaled_leaks(const UnjournaledLeaksPayload &) {}
  virtual void on_signal(const SignalPayload &) {}
  virtual void on_authority_reclaim(const AuthorityReclaimPayload &) {}
  virtual void on_device(const DevicePayload &) {}
  // Each entry: an allocation id with its class in the top bits (journal_format.h).
  virtual void on_reachability(const ReachabilityPayload &, const uint64_t * /*entries*/) {}
  virtual void on_check(const ReachabilityPayload &, const uint64_t * /*entries*/) {}
  // Now and then while reading (every 65536 slots): how far the reader is, for progress.
  virtual void on_progress(size_t /*slots_read*/, size_t /*slot_count*/) {}

  // The first slot of the record being visited: its place in the journal.
  uint64_t record_slot() const noexcept { return record_slot_; }

 private:
  friend bool read_slots(SlotSource &, size_t, JournalVisitor &, ReadStats &, std::string &);
  uint64_t record_slot_ = 0;
};

struct ReadStats {
  uint64_t records = 0;
  uint64_t uncommitted_slots = 0;  // zero tags and orphaned continuations (a kill mid-write)
  uint64_t corrupt_slots = 0;      // tags that are not leaseguard's
  uint64_t malformed_records = 0;  // committed records whose payload does not parse
  uint64_t unknown_records = 0;    // types from a newer leaseguard
  uint64_t truncated_bytes = 0;    // a partial slot at the end of the file
  bool damaged_header = false;     // the header's tag was gone (its payload read all the same)
  // read_journal only: the journal's writer still ran when the reading ended (writer_liveness.h).
  bool writer_running = false;
  bool damaged() const { return corrupt_slots || malformed_records || truncated_bytes || damaged_header; }
};

// Returns false and sets `error` if the file cannot be read or does not start with a
// leaseguard journal header; otherwise visits every record that can be read. The file is
// read `window_slots` slots at a time (at least a record's worth), so reading a journal of
// any size takes that much memory; a read that fails part of the way returns false after
// visiting what came before it.
inline constexpr size_t kDefaultReadWindowSlots = size_t{1} << 16;  // 4 MiB
bool read_journal(const std::string &path, JournalVisitor &visitor, ReadStats &stats, std::string &error,
                  size_t window_slots = kDefaultReadWindowSlots);

// The same over bytes in memory (used by the fuzzer and tests).
bool read_journal_bytes(const unsigned char *data, size_t size, JournalVisitor &visitor, ReadStats &stats,
                        std::string &error);

}  // namespace leaseguard::journal
