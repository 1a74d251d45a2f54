// libFuzzer target: the journal reader and the report built from it, on arbitrary bytes.
// Anything may come back (an error, a partial report); nothing may crash, hang or grow
// without bound. The same bytes read from a file a window at a time must visit exactly what
// they visit in memory.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "journal_reader.h"
#include "renderers.h"
#include "journal_replay.h"

namespace {

// A digest of every visit, in order, with each record's place.
struct VisitDigest : leaseguard::journal::JournalVisitor {
  uint64_t value = 1469598103934665603ull;
  void mix(uint64_t word) { value = (value ^ word ^ record_slot() << 20) * 1099511628211ull; }
  void on_header(const leaseguard::journal::HeaderPayload &header) override { mix(header.version); }
  void on_alloc(const leaseguard::journal::AllocPayload &alloc) override { mix(alloc.id); }
  void on_free(const leaseguard::journal::FreePayload &free_record) override { mix(free_record.id + 1); }
  void on_stack(uint32_t id, const std::vector<leaseguard::journal::StackFrame> &frames) override {
    mix(id + frames.size());
  }
  void on_lease_begin(const leaseguard::journal::LeaseBeginPayload &, std::string_view name) override {
    mix(name.size() + 2);
  }
  void on_module(const leaseguard::journal::ModuleInfo &module) override { mix(module.path.size() + 3); }
  void on_process(const leaseguard::journal::ProcessInfo &process) override { mix(process.argv.size() + 4); }
  void on_lease_end(const leaseguard::journal::LeaseEndPayload &end) override {
    mix(end.lease_id + end.unjournaled_allocations + 5);
  }
  void on_context_destroy(const leaseguard::journal::ContextDestroyPayload &destroy) override {
    mix(destroy.context + 6);
  }
  void on_process_end(const leaseguard::journal::ProcessEndPayload &end) override { mix(end.dropped_records + 7); }
  void on_pool_destroy(const leaseguard::journal::PoolDestroyPayload &destroy) override { mix(destroy.pool + 8); }
  void on_recycled(const leaseguard::journal::RecycledPayload &recycled) override { mix(recycled.allocations + 9); }
  void on_journal_full(const leaseguard::journal::JournalFullPayload &full) override { mix(full.time_ns + 10); }
  void on_unjournaled_leaks(const leaseguard::journal::UnjournaledLeaksPayload &leaks) override {
    mix(leaks.allocations + 11);
  }
};

void check_windowed_read_matches(const uint8_t *data, size_t size) {
  using namespace leaseguard::journal;
  if (size == 0) return;  // an empty file is refused before it is read
  VisitDigest whole;
  ReadStats whole_stats;
  std::string error;
  const bool whole_ok = read_journal_bytes(data, size, whole, whole_stats, error);
  const int fd = memfd_create("journal", MFD_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, data, size) == static_cast<ssize_t>(size)) {
    VisitDigest windowed;
    ReadStats stats;
    const bool ok =
        read_journal("/proc/self/fd/" + std::to_string(fd), windowed, stats, error, kMaxSlotsPerRecord + size % 7);
    if (ok != whole_ok || (ok && (windowed.value != whole.value || stats.records != whole_stats.records ||
                                  stats.corrupt_slots != whole_stats.corrupt_slots ||
                                  stats.uncommitted_slots != whole_stats.uncommitted_slots ||
                                  stats.malformed_records != whole_stats.malformed_records ||
                                  stats.unknown_records != whole_stats.unknown_records ||
                                  stats.truncated_bytes != whole_stats.truncated_bytes)))
      __builtin_trap();
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_windowed_read_matches(data, size);
  leaseguard::report::ProcessReport process;
  std::string error;
  if (!leaseguard::report::load_journal_bytes(data, size, process, error)) return 0;
  leaseguard::report::Report report;
  report.processes.push_back(std::move(process));
  leaseguard::report::render_text(report);
  leaseguard::report::render_json(report);
  return 0;
}
