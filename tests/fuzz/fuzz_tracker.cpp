// libFuzzer target: the tracker as the hooks drive it, on a sequence of operations read from
// the input (allocations and frees of addresses and of VMM handles, which count references,
// leases begun, entered, left and ended, with policy report or reclaim, context destroys with
// allocations made while they run). A plain model says what must be live and what each
// ending must report, and each lease's peak of live bytes when it ended; the tracker's live
// table, its lease_end counts and the report replayed from its journal must all agree with
// it, and the replay's own conservation law (each allocation freed, reported once, or live)
// must hold. Any disagreement aborts, so the fuzzer keeps it. The unit tests run it on
// generated inputs from a fixed seed (tests/unit/tracker_property_test.cpp). Peaks check where the replay applies
// each free, stored in place or not: one thread's operations are in the journal in order.
// An input whose first byte has its five high bits set runs without a journal (it cannot be
// created): the live table and the side store decide alone, and there is no report to check.
// One whose first byte's five high bits are 11110 writes a compact journal (kHeaderCompact),
// whose report must list the same leaks, and peaks no higher (the allocations it wrote over
// are in no peak).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "log.h"
#include "reclaim_backend.h"
#include "journal_replay.h"
#include "tracker.h"

namespace leaseguard {
namespace {

constexpr uint64_t kContexts[] = {0xC1, 0xC2};

// One leak as a report lists it: the lease that ended, how, what it held, and whether it was
// given back.
using ReportedLeak = std::tuple<uint32_t, EndedBy, uint64_t, uint64_t, bool>;
// A lease's ending by its end, its expiry or at exit, and the lease's peak of live bytes by then.
using EndingPeak = std::tuple<uint32_t, EndedBy, uint64_t>;

// Gives reclaimed memory back as a driver would, refusing some (every size divisible by 5),
// as a driver may: those stay allocated and the program's own free must reach the driver.
bool refuses(uint64_t bytes) { return bytes % 5 == 0; }
class Backend : public ReclaimBackend {
 public:
  int release(const HandleRecord &record) noexcept override { return refuses(record.bytes) ? 1 : 0; }
};

struct ModelAllocation {
  uint64_t bytes = 0;
  uint64_t context = 0;
  Kind kind = Kind::Device;
  uint32_t lease = 0;
  bool reported = false;
  uint64_t order = 0;  // when it was recorded, to tell what came before a destroy began
};

// What a record is found by: an address, or a VMM handle (its own namespace: the values
// overlap the addresses on purpose) and which reference to it.
struct Key {
  bool handle = false;
  uint64_t value = 0;
  uint16_t reference = 0;
  bool operator<(const Key &other) const {
    return std::tie(handle, value, reference) < std::tie(other.handle, other.value, other.reference);
  }
};

struct Model {
  std::map<Key, ModelAllocation> live;
  std::vector<uint32_t> entered;                       // this thread's entered leases, innermost last
  std::map<uint32_t, bool> leases;                     // begun leases: ended?
  std::map<uint32_t, bool> reclaims;                   // begun leases: policy reclaim?
  std::multiset<std::pair<bool, uint64_t>> reclaimed;  // given back, late free still to come
  std::vector<ReportedLeak> reported;
  uint64_t next_order = 0;
  // Live bytes by the lease each allocation was recorded under, as the replay counts them:
  // an allocation stays in them until it is freed, reclaimed or goes with its context, even
  // once reported.
  std::map<uint32_t, uint64_t> live_bytes;
  std::map<uint32_t, uint64_t> peak_bytes;
  std::vector<EndingPeak> ending_peaks;

  void add_bytes(uint32_t lease, uint64_t bytes) {
    live_bytes[lease] += bytes;
    peak_bytes[lease] = std::max(peak_bytes[lease], live_bytes[lease]);
  }
  void remove_bytes(const ModelAllocation &allocation) { live_bytes[allocation.lease] -= allocation.bytes; }

  uint32_t current_lease() const {
    for (auto it = entered.rbegin(); it != entered.rend(); ++it)
      if (!leases.at(*it)) return *it;
    return kProcessLeaseId;
  }
  size_t end_lease(uint32_t lease, EndedBy ended_by) {
    leases[lease] = true;
    ending_peaks.emplace_back(lease, ended_by, peak_bytes[lease]);
    const bool reclaim = reclaims[lease] && ended_by != EndedBy::Exit;  // at exit the process gives all back
    size_t leaked = 0;
    for (auto it = live.begin(); it != live.end();) {
      ModelAllocation &allocation = it->second;
      if (allocation.lease != lease || allocation.reported) {
        ++it;
        continue;
      }
      ++leaked;
      const bool given_back = reclaim && !refuses(allocation.bytes);
      reported.emplace_back(lease, ended_by, it->first.value, allocation.bytes, given_back);
      if (given_back) {
        reclaimed.emplace(it->first.handle, it->first.value);
        remove_bytes(allocation);
        it = live.erase(it);
      } else {
        allocation.reported = true;
        ++it;
      }
    }
    return leaked;
  }
};

// FUZZ_TRACKER_TRACE=1 prints each operation, to read a failing input by.
const bool g_trace = std::getenv("FUZZ_TRACKER_TRACE") != nullptr;
#define TRACE(...)                                  \
  do {                                              \
    if (g_trace) std::fprintf(stderr, __VA_ARGS__); \
  } while (0)

[[noreturn]] void disagree(const char *what) {
  std::fprintf(stderr, "fuzz_tracker: the tracker and its model disagree: %s\n", what);
  std::abort();
}

class Reader {
 public:
  Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  bool more() const { return at_ < size_; }
  uint8_t next() { return at_ < size_ ? data_[at_++] : 0; }

 private:
  const uint8_t *data_;
  size_t size_;
  size_t at_ = 0;
};

void allocate(Tracker &tracker, Model &model, uint8_t choice, uint64_t &bytes_counter) {
  const uint64_t address = 0x10000 + static_cast<uint64_t>(choice & 15) * 0x1000;
  const bool async = (choice & 16) != 0;
  AllocationEvent event;
  event.api = async ? Api::cuMemAllocAsync : Api::cuMemAlloc_v2;
  event.kind = async ? Kind::Async : Kind::Device;
  event.address = address;
  event.bytes = ++bytes_counter;  // each allocation its own size, to tell them apart
  event.context = kContexts[(choice >> 5) & 1];
  tracker.on_alloc(event);
  TRACE("alloc %#llx %s bytes %llu context %#llx lease %u\n", static_cast<unsigned long long>(address),
        async ? "async" : "device", static_cast<unsigned long long>(event.bytes),
        static_cast<unsigned long long>(event.context), model.current_lease());
  // The same address again: the driver handed it out, so its free was never seen. It came
  // before this allocation.
  ModelAllocation &slot = model.live[Key{false, address, 0}];
  if (slot.bytes != 0) model.remove_bytes(slot);
  slot = ModelAllocation{event.bytes, event.context, event.kind, model.current_lease(), false, model.next_order++};
  model.add_bytes(slot.lease, slot.bytes);
}

// A VMM handle created or retained: each handout is a reference of its own, numbered from 0
// by the first number free.
void allocate_handle(Tracker &tracker, Model &model, uint8_t choice, uint64_t &bytes_counter) {
  const uint64_t handle = 0x10000 + static_cast<uint64_t>(choice & 15) * 0x1000;
  AllocationEvent event;
  event.api = (choice & 16) != 0 ? Api::cuMemRetainAllocationHandle : Api::cuMemCreate;
  event.kind = Kind::Vmm;
  event.address = handle;
  event.bytes = ++bytes_counter;
  event.context = kContexts[(choice >> 5) & 1];
  tracker.on_alloc(event);
  uint16_t reference = 0;
  while (model.live.count(Key{true, handle, reference}) != 0) ++reference;
  TRACE("handle %#llx reference %u bytes %llu lease %u\n", static_cast<unsigned long long>(handle), reference,
        static_cast<unsigned long long>(event.bytes), model.current_lease());
  model.add_bytes(model.current_lease(), event.bytes);
  model.live[Key{true, handle, reference}] =
      ModelAllocation{event.bytes, event.context, event.kind, model.current_lease(), false, model.next_order++};
}

// A handle released: the reference with the highest number goes.
void release_handle(Tracker &tracker, Model &model, uint8_t choice) {
  const uint64_t handle = 0x10000 + static_cast<uint64_t>(choice & 15) * 0x1000;
  const FreeOutcome outcome = tracker.on_free(Api::cuMemRelease, handle);
  TRACE("release %#llx: %d\n", static_cast<unsigned long long>(handle), static_cast<int>(outcome));
  if (auto late = model.reclaimed.find({true, handle}); late != model.reclaimed.end()) {
    if (outcome != FreeOutcome::Reclaimed) disagree("whether a release was the late free of a reclaimed handle");
    model.reclaimed.erase(late);
    return;
  }
  auto newest = model.live.end();
  for (auto it = model.live.lower_bound(Key{true, handle, 0});
       it != model.live.end() && it->first.handle && it->first.value == handle; ++it)
    newest = it;
  if (outcome != (newest != model.live.end() ? FreeOutcome::Known : FreeOutcome::Unknown))
    disagree("whether a release was of a live handle");
  if (newest != model.live.end()) {
    model.remove_bytes(newest->second);
    model.live.erase(newest);
  }
}

void free_one(Tracker &tracker, Model &model, uint8_t choice) {
  const uint64_t address = 0x10000 + static_cast<uint64_t>(choice & 15) * 0x1000;
  auto it = model.live.find(Key{false, address, 0});
  const Api api = it != model.live.end() && it->second.kind == Kind::Async ? Api::cuMemFreeAsync : Api::cuMemFree_v2;
  const FreeOutcome outcome = tracker.on_free(api, address);
  TRACE("free %#llx: %d\n", static_cast<unsigned long long>(address), static_cast<int>(outcome));
  // The next free of a reclaimed address is its late free, even if the address was handed
  // out again since (docs/leases.md): kept from the driver, the new owner's record untouched.
  if (auto late = model.reclaimed.find({false, address}); late != model.reclaimed.end()) {
    if (outcome != FreeOutcome::Reclaimed) disagree("whether a free was the late free of reclaimed memory");
    model.reclaimed.erase(late);
    return;
  }
  const FreeOutcome expected = it != model.live.end() ? FreeOutcome::Known : FreeOutcome::Unknown;
  if (outcome != expected) disagree("whether a free was of a live allocation");
  if (it != model.live.end()) {
    model.remove_bytes(it->second);
    model.live.erase(it);
  }
}

void destroy_context(Tracker &tracker, Model &model, Reader &input, uint64_t &bytes_counter) {
  const uint64_t context = kContexts[input.next() & 1];
  const ContextDestroyMark mark = tracker.before_context_destroy();
  TRACE("destroy %#llx begins\n", static_cast<unsigned long long>(context));
  const uint64_t begun = model.next_order;
  // Allocations another thread makes while the destroy runs: a new context given the
  // destroyed one's handle may hold some of them.
  for (int during = input.next() % 3; during > 0; --during) allocate(tracker, model, input.next(), bytes_counter);
  tracker.on_context_destroyed(Api::cuCtxDestroy_v2, context, 0, mark);
  for (auto it = model.live.begin(); it != model.live.end();) {
    const ModelAllocation &allocation = it->second;
    // Stream-ordered memory belongs to its pool, and VMM handles to no context.
    if (allocation.context != context || allocation.kind == Kind::Async || allocation.kind == Kind::Vmm ||
        allocation.order >= begun) {
      ++it;
      continue;
    }
    if (!allocation.reported)
      model.reported.emplace_back(allocation.lease, EndedBy::ContextDestroy, it->first.value, allocation.bytes, false);
    model.remove_bytes(allocation);
    it = model.live.erase(it);
  }
}

std::vector<EndingPeak> ending_peaks(const report::ProcessReport &process) {
  std::vector<EndingPeak> peaks;
  for (const report::LeaseEnding &ending : process.leases)
    if (ending.ended_by == EndedBy::End || ending.ended_by == EndedBy::Exit || ending.ended_by == EndedBy::Expiry)
      peaks.emplace_back(ending.id, ending.ended_by, ending.peak_bytes);
  return peaks;
}

std::vector<ReportedLeak> reported_leaks(const report::ProcessReport &process) {
  std::vector<ReportedLeak> leaks;
  for (const report::LeaseEnding &ending : process.leases)
    for (const report::Leak &leak : ending.leaks)
      leaks.emplace_back(ending.id, ending.ended_by, leak.address, leak.bytes, leak.reclaimed);
  return leaks;
}

void run(const uint8_t *data, size_t size, const std::string &directory) {
  // The ops read only an op byte's three low bits, so the others can choose the mode.
  const bool journaled = size == 0 || (data[0] & 0xF8) != 0xF8;
  const bool compact = size != 0 && (data[0] & 0xF8) == 0xF0;
  Options options;
  options.out_dir = journaled ? directory : "/proc/self/no-such-directory";
  options.journal_mode = compact ? JournalMode::Compact : JournalMode::Full;
  options.run_id = "fuzz";
  options.stack_depth = 0;
  options.log_level = LogLevel::Quiet;
  Tracker tracker(options);
  Backend backend;
  tracker.set_reclaim_backend(&backend);
  Model model;
  model.leases[kProcessLeaseId] = false;
  std::vector<uint64_t> begun;  // leases in the order begun
  uint64_t bytes_counter = 0;
  Reader input(data, size);
  TRACE("%s\n", !journaled ? "without a journal" : compact ? "with a compact journal" : "with a journal");
  while (input.more()) {
    const uint8_t op = input.next();
    switch (op % 8) {
      case 0:
      case 1: allocate(tracker, model, input.next(), bytes_counter); break;
      case 2: free_one(tracker, model, input.next()); break;
      case 3: {  // a lease begun and entered
        const bool reclaim = (input.next() & 1) != 0;
        if (model.entered.size() >= 8) break;
        const uint64_t id = tracker.lease_begin("fuzz", 0, reclaim ? Policy::Reclaim : Policy::Report);
        if (id == 0 || tracker.lease_enter(id) != 0) disagree("a new lease could not be begun and entered");
        TRACE("lease %llu begun and entered%s\n", static_cast<unsigned long long>(id), reclaim ? ", reclaim" : "");
        begun.push_back(id);
        model.leases[static_cast<uint32_t>(id)] = false;
        model.reclaims[static_cast<uint32_t>(id)] = reclaim;
        model.entered.push_back(static_cast<uint32_t>(id));
        break;
      }
      case 4: {  // the innermost lease left, or one begun ended
        const uint8_t which = input.next();
        if ((which & 1) != 0) {
          if (tracker.lease_leave() != (model.entered.empty() ? -1 : 0)) disagree("leaving a lease");
          TRACE("lease left\n");
          if (!model.entered.empty()) model.entered.pop_back();
        } else if (!begun.empty()) {
          const uint64_t id = begun[(which >> 1) % begun.size()];
          const bool ended = model.leases[static_cast<uint32_t>(id)];
          const int leaked = tracker.lease_end(id);
          TRACE("end lease %llu: %d leaked\n", static_cast<unsigned long long>(id), leaked);
          const int expected = ended ? -1 : static_cast<int>(model.end_lease(static_cast<uint32_t>(id), EndedBy::End));
          if (leaked != expected) disagree("how many allocations an ending lease leaked");
        }
        break;
      }
      case 5: destroy_context(tracker, model, input, bytes_counter); break;
      case 6: allocate_handle(tracker, model, input.next(), bytes_counter); break;
      case 7: release_handle(tracker, model, input.next()); break;
    }
    if (tracker.live_allocations() != model.live.size()) disagree("how many allocations are live");
  }
  while (tracker.lease_leave() == 0) {
  }  // entered leases are the thread's: none may outlive this tracker
  tracker.finish_process();
  // At exit: the open leases innermost (newest) first, each with what it still holds; what
  // any lease that ended already holds, and what the process lease holds, last.
  for (auto it = model.leases.rbegin(); it != model.leases.rend(); ++it)
    if (!it->second && it->first != kProcessLeaseId) model.end_lease(it->first, EndedBy::Exit);
  model.ending_peaks.emplace_back(kProcessLeaseId, EndedBy::Exit, model.peak_bytes[kProcessLeaseId]);
  for (auto &[key, allocation] : model.live) {
    if (allocation.reported) continue;
    allocation.reported = true;
    model.reported.emplace_back(
        model.leases.at(allocation.lease) && allocation.lease != kProcessLeaseId ? kProcessLeaseId : allocation.lease,
        EndedBy::Exit, key.value, allocation.bytes, false);
  }
  if (!journaled) {
    if (!tracker.journal_path().empty()) disagree("a journal was made where none can be");
    return;
  }
  report::ProcessReport process;
  std::string error;
  if (!report::load_journal(tracker.journal_path(), process, error)) {
    if (bytes_counter == 0 && begun.empty()) return;  // nothing was recorded: no journal
    disagree(("the journal does not load: " + error).c_str());
  }
  // The conservation law (journal_replay.cpp): each allocation freed, reported once, or live.
  if (!process.accounting_problem.empty()) disagree(process.accounting_problem.c_str());
  std::vector<ReportedLeak> got = reported_leaks(process);
  std::vector<ReportedLeak> expected = model.reported;
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  if (got != expected) {
    auto print = [](const char *who, const std::vector<ReportedLeak> &leaks) {
      for (const auto &[lease, by, address, bytes, given_back] : leaks)
        std::fprintf(stderr, "%s lease %u ended_by %d address %#llx bytes %llu%s\n", who, lease, static_cast<int>(by),
                     static_cast<unsigned long long>(address), static_cast<unsigned long long>(bytes),
                     given_back ? " reclaimed" : "");
    };
    print("report:", got);
    print("model: ", expected);
    disagree("which leaks the report lists");
  }
  std::vector<EndingPeak> got_peaks = ending_peaks(process);
  std::vector<EndingPeak> expected_peaks = model.ending_peaks;
  std::sort(got_peaks.begin(), got_peaks.end());
  std::sort(expected_peaks.begin(), expected_peaks.end());
  // Compact: the same endings, each peak at most the model's.
  bool peaks_agree = got_peaks.size() == expected_peaks.size();
  for (size_t i = 0; peaks_agree && i < got_peaks.size(); ++i) {
    const auto &[lease, by, peak] = got_peaks[i];
    const auto &[expected_lease, expected_by, expected_peak] = expected_peaks[i];
    peaks_agree =
        lease == expected_lease && by == expected_by && (compact ? peak <= expected_peak : peak == expected_peak);
  }
  if (!peaks_agree) {
    auto print = [](const char *who, const std::vector<EndingPeak> &peaks) {
      for (const auto &[lease, by, peak] : peaks)
        std::fprintf(stderr, "%s lease %u ended_by %d peak %llu\n", who, lease, static_cast<int>(by),
                     static_cast<unsigned long long>(peak));
    };
    print("report:", got_peaks);
    print("model: ", expected_peaks);
    disagree("each lease's peak of live bytes");
  }
}

}  // namespace
}  // namespace leaseguard

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;                               // long enough for any interleaving; keeps each run short
  leaseguard::set_log_level(leaseguard::LogLevel::Quiet);  // lease endings would log each time
  char directory[] = "/tmp/leaseguard-fuzz-tracker-XXXXXX";
  if (mkdtemp(directory) == nullptr) return 0;
  leaseguard::run(data, size, directory);
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  return 0;
}
