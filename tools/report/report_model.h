// The report: what leaked, per process and lease, derived from journals.
//
// Journals are the source of truth; this model is rebuilt from them by replaying their
// records in order (see journal_replay.cpp for how each record changes what is live and
// when an allocation becomes a leak).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_ids.h"
#include "journal_reader.h"
#include "text.h"

namespace leaseguard::report {

// Its strings are shared with every other frame that names the same (text.h).
struct Frame {
  Text module;  // path of the object the frame is in; empty if none
  Text build_id;
  uint64_t offset = 0;   // relative to the module's load base (the address if no module)
  uint64_t address = 0;  // absolute address in the process, as recorded
  std::optional<Text> function;
  std::optional<Text> file;
  std::optional<int> line;
  // A call the compiler inlined: this function's code is in the frame after it, at the same
  // address (symbolizer.h). Found in debug information, never recorded.
  bool inlined = false;
};

// A stack's frames, innermost first, as the report reads them: indices into its process's
// table of distinct frames (ProcessReport::frames), or a vector of frames of its own.
class StackView {
 public:
  StackView() = default;
  StackView(const std::vector<Frame> &frames)
      : table_(frames.data()), size_(frames.size()) {}  // NOLINT: a stack at hand
  StackView(const std::vector<Frame> &table, const std::vector<uint32_t> &indices)
      : table_(table.data()), indices_(indices.data()), size_(indices.size()) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Frame &operator[](size_t i) const { return indices_ != nullptr ? table_[indices_[i]] : table_[i]; }
  const Frame &front() const { return (*this)[0]; }
  const Frame &back() const { return (*this)[size_ - 1]; }

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Frame;
    using difference_type = std::ptrdiff_t;
    using pointer = const Frame *;
    using reference = const Frame &;
    Iterator(const StackView *view, size_t at) : view_(view), at_(at) {}
    const Frame &operator*() const { return (*view_)[at_]; }
    const Frame *operator->() const { return &(*view_)[at_]; }
    Iterator &operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++at_;
      return before;
    }
    bool operator==(const Iterator &other) const { return at_ == other.at_; }
    bool operator!=(const Iterator &other) const { return at_ != other.at_; }

   private:
    const StackView *view_;
    size_t at_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size_); }

 private:
  const Frame *table_ = nullptr;
  const uint32_t *indices_ = nullptr;  // nullptr: table_ holds the stack's own frames in order
  size_t size_ = 0;
};

// What a scan of the program's memory found of a live allocation (core/reachability/reachability.h):
// unchecked where none classified it (the process was killed, --reachability=off, or a
// lease other than the process's).
enum class Reachability : uint8_t { Unchecked = 0, Direct = 1, Indirect = 2, Reachable = 3 };
const char *reachability_name(Reachability value);
std::optional<Reachability> reachability_from_name(std::string_view name);

struct Leak {
  uint64_t id = 0;
  Api api = Api::Unknown;
  Kind kind = Kind::Device;
  uint64_t bytes = 0;
  uint64_t address = 0;
  int32_t device = 0;
  uint32_t thread = 0;
  uint64_t age_ms = 0;
  bool reclaimed = false;
  uint32_t stack_id = 0;
  Reachability reachability = Reachability::Unchecked;
};

// A free of an allocation that its lease had already reported (ended, expired) or
// reclaimed. `forwarded` is false when leaseguard had reclaimed the memory and kept the
// free from the driver.
struct LateFree {
  uint64_t id = 0;
  Api api = Api::Unknown;
  uint64_t address = 0;
  uint32_t thread = 0;
  uint32_t stack_id = 0;
  bool forwarded = true;
  double time_ms = 0;
};

struct LeaseEnding {
  uint32_t id = 0;
  std::string name;
  EndedBy ended_by = EndedBy::Exit;
  Policy policy = Policy::Report;
  uint64_t ttl_ms = 0;
  double begin_ms = 0;  // since the process started
  double end_ms = 0;
  uint64_t peak_bytes = 0;  // most bytes the lease held live at once, up to this ending
  int signal = 0;           // ended_by crash: the SIGTERM/SIGINT whose default action killed the
                            // process; ended_by exit in older journals: the one that ended it
  std::vector<Leak> leaks;  // reported: direct, indirect or unchecked
  // Live at the lease's end but still reachable by the program: held on purpose, not leaks.
  std::vector<Leak> reachable;
  std::vector<LateFree> late_frees;
  // Leaks allocated while the journal was full: counted by the process, never listed (no
  // record holds their stack, size or entry point one by one).
  uint64_t unjournaled_allocations = 0;
  uint64_t unjournaled_bytes = 0;

  uint64_t leaked_bytes() const;  // the listed leaks' and the unjournaled ones'
  uint64_t leaked_allocations() const { return leaks.size() + unjournaled_allocations; }
};

// Live bytes of one lease over the process's life, for plots: (ms since start, bytes),
// thinned to a bounded number of points.
struct Timeline {
  uint32_t lease_id = 0;
  std::string lease_name;
  std::vector<std::pair<double, uint64_t>> points;
};

// A memory pool the program destroyed while allocations from it were outstanding: the
// driver releases it only once they are freed.
struct PoolDestroyedInUse {
  uint64_t pool = 0;
  double time_ms = 0;  // since the process started
  uint64_t outstanding_bytes = 0;
};

// A free of a value the program had already freed (and that was not handed out again).
// leaseguard passes it to the driver, which decides (and usually refuses).
struct DoubleFree {
  Api api = Api::Unknown;
  uint64_t address = 0;
  uint32_t thread = 0;
  uint32_t stack_id = 0;
  double time_ms = 0;
  double first_freed_ms = 0;
};

// A free by an entry point of another family than the allocation at that address: live then
// (the driver refuses it; the allocation stays live) or freed already by its own family's
// release (a host buffer registered, unregistered, then freed as pinned host memory). Not a double free:
// the value was never this entry point's to free.
struct WrongFamilyFree {
  Api api = Api::Unknown;           // the free
  Api allocated_by = Api::Unknown;  // the allocation at the address (Unknown: not recorded)
  uint64_t address = 0;
  uint32_t thread = 0;
  uint32_t stack_id = 0;
  double time_ms = 0;
  std::optional<double> freed_ms;  // when its own release freed it, if it had; else it was live
};

// A SIGTERM or SIGINT that reached the process: the program's handler ran, or the default
// action (then the process died of it).
struct SignalArrival {
  int signal = 0;
  double time_ms = 0;
  bool handled = false;
};

// A live check (leaseguard_check): what the process had lost and still reached at that moment,
// of the allocations live then.
struct LiveCheck {
  double time_ms = 0;
  uint64_t lost_bytes = 0;
  uint64_t lost_allocations = 0;  // direct, indirect and unchecked
  uint64_t reachable_bytes = 0;
  uint64_t reachable_allocations = 0;
  uint32_t reachability_flags = 0;  // journal::kReachability*: why what it did not find reachable is unchecked
};

// A site (a stack and an entry point) with memory lost at the last live check, against the
// check before it and the first: whether, and how fast, it grows across the checks.
struct SiteGrowth {
  uint32_t stack_id = 0;
  Api api = Api::Unknown;
  uint64_t lost_bytes = 0;  // at the last check
  uint64_t lost_allocations = 0;
  int64_t growth_bytes = 0;  // since the check before it
  int64_t growth_allocations = 0;
  int64_t since_first_bytes = 0;  // since the first check
  double rate_bytes_per_s = 0;    // since_first_bytes over the time from the first check to the last
  bool growing() const { return since_first_bytes > 0; }
};

struct ProcessReport {
  std::string journal;
  int32_t pid = 0;
  int32_t ppid = 0;
  // Each device it used, numbered as it saw them (after CUDA_VISIBLE_DEVICES), with the GPU's
  // UUID: what names the GPU on the node whatever a scheduler made visible.
  std::map<int, std::string> device_uuids;
  uint64_t pid_namespace = 0;  // the inode of its PID namespace; 0: unknown (core/base/pid_namespace.h)
  std::string executable;
  std::vector<std::string> command;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  bool complete = false;  // the process ended its leases itself
  // Its journal's writer still ran when the report was made (writer_liveness.h): its open
  // leases have not ended, and what they own is live, not leaked, counted here.
  bool running = false;
  uint64_t live_allocations = 0;
  uint64_t live_bytes = 0;
  // Where the journal's replay found an allocation accounted other than exactly once (freed,
  // reported at one lease ending, or live): what it found. Empty when the law holds.
  std::string accounting_problem;
  // The drivers loaded when it ended (journal::kDriversKnown and kDriver* bits), 0 if not
  // known (it died, or an older journal).
  uint32_t drivers = 0;
  bool exec_replaced = false;  // its image was replaced by exec (a later journal of the pid)
  uint64_t start_realtime_ns = 0;
  std::vector<LeaseEnding> leases;
  // Each distinct frame once, and each stack (by stack id) as indices into them, innermost
  // first: stacks share most of their frames, and a frame holds its module's path and its
  // function's and file's names (65,536 distinct 32-frame stacks took 452 MiB as copies).
  std::vector<Frame> frames;
  std::unordered_map<uint32_t, std::vector<uint32_t>> stacks;
  // The frames of stack `stack_id`, or an empty view if there is no such stack.
  StackView stack(uint32_t stack_id) const;
  bool has_stack(uint32_t stack_id) const { return stacks.count(stack_id) != 0; }
  // Adds stack `stack_id` (replacing one of that id), each frame found in `frames` by its
  // content or added to it.
  void add_stack(uint32_t stack_id, const std::vector<Frame> &stack);
  std::unordered_map<std::string, uint32_t> frame_ids;  // add_stack's index of frames by content
  std::vector<Timeline> timelines;                      // one per lease that held memory
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t unknown_frees = 0;
  uint64_t late_frees = 0;
  uint64_t dropped_records = 0;
  // A compact journal (LEASEGUARD_JOURNAL=compact): allocations freed right after they were
  // made may have been recycled. They are counted here (lower bounds) and in allocations and
  // frees, but are not in the timelines or the leases' peaks.
  bool compact_journal = false;
  // The grain of allocation and free times, from the journal's header (0: journals whose
  // times were exact to microseconds).
  double event_time_resolution_ms = 0;
  // Peaks and timelines are exact within each thread; between threads, to this many ms (the
  // journal's threads wrote in runs of their own, journal_format.h kHeaderThreadRuns): a free
  // on one thread and an allocation on another within it may be counted in either order, so
  // a peak may read above what the driver held by the frees that crossed. 0: exact (one
  // thread allocated, or a journal written before runs).
  double peak_between_threads_ms = 0;
  // The journal could not grow (a full file system, or the most records a journal holds):
  // when, since the process started, and why (an errno). Later allocations are missing.
  std::optional<double> journal_full_ms;
  int journal_full_error = 0;
  uint64_t recycled_allocations = 0;
  uint64_t recycled_bytes = 0;
  std::vector<PoolDestroyedInUse> pools_destroyed_in_use;
  // Where it has two checks or more: each site lost at the last, growing first, fastest first.
  std::vector<SiteGrowth> site_growth;
  // Index of site_growth by every stack id of a site (stacks recorded apart may have the same
  // frames: one site) and its entry point; set with add_site_stack.
  std::unordered_map<uint64_t, size_t> site_growth_index;
  void add_site_stack(uint32_t stack_id, Api api, size_t site) {
    site_growth_index[uint64_t{stack_id} << 16 | static_cast<uint16_t>(api)] = site;
  }
  // The growth of the site of this stack and entry point, or nullptr.
  const SiteGrowth *growth_of(uint32_t stack_id, Api api) const;
  std::vector<DoubleFree> double_frees;
  std::vector<WrongFamilyFree> wrong_family_frees;
  std::vector<SignalArrival> signals;
  std::vector<LiveCheck> checks;  // in the order they were made
  journal::ReadStats read_stats;
  // The process's live allocations were classified (a Reachability record), and the
  // journal::kReachability* flags it carried.
  bool classified = false;
  uint32_t reachability_flags = 0;

  uint64_t leaked_bytes() const;
  uint64_t leaked_allocations() const;
  uint64_t reachable_bytes() const;
  uint64_t reachable_allocations() const;
};

struct SuppressionUse {
  std::string rule;    // "leak:PATTERN [qualifiers]"
  std::string source;  // file:line
  uint64_t allocations = 0;
  uint64_t bytes = 0;
};

// `leaseguard lease start`'s lease as the node lease authority reported its end
// (docs/lease-authority.md): how it ended, when each stage of its teardown began, what each
// process gave back when asked and held at the end, and what the device said of them.
struct TeardownStage {
  std::string name;    // reclaim, sigterm, sigkill, verify
  uint64_t at_ms = 0;  // after the lease's end
};
struct LeaseProcessAccount {
  int pid = 0;
  uint64_t gave_back_bytes = 0;                // when the reclaim stage asked
  std::vector<std::pair<int, uint64_t>> held;  // device, bytes its journal said it held at the end
  std::string journal;                         // where it wrote them ("-": a process found, not registered)
};
struct AuthorityLease {
  uint64_t id = 0;
  std::string name;
  std::string ended_by;  // expiry, end, exit
  std::string teardown;  // report, reclaim, terminate
  std::vector<TeardownStage> stages;
  std::vector<LeaseProcessAccount> processes;
  // The verify stage's result: "clean", "held" (with `verify_held`), "skipped" (with
  // `verify_detail`: why); empty where the chain has no verify stage.
  std::string verify;
  std::string verify_detail;
  struct Held {
    int pid = 0;
    int device = 0;
    std::optional<uint64_t> bytes;  // none: the device did not say how much
  };
  std::vector<Held> verify_held;
  // Processes of the lease still running when the teardown's SIGKILL wait was over: stuck in
  // the kernel (a driver call, a frozen cgroup). The node needs a person.
  std::vector<int> survived;

  uint64_t gave_back_bytes() const;
  uint64_t held_bytes() const;
};

struct Report {
  std::vector<ProcessReport> processes;
  uint64_t suppressed_allocations = 0;
  std::vector<SuppressionUse> suppressions_used;  // those that matched something
  bool suggest_suppressions = false;              // --gen-suppressions
  uint64_t filtered_allocations = 0;              // left out by --min-bytes, --lease, --api, --kind
  uint64_t baseline_allocations = 0;              // left out because the baseline has them
  size_t max_groups = 0;                          // text: at most this many groups per lease; 0: all
  std::vector<std::string> problems;              // damaged inputs, said in the report
  // Known to `run` only: the command ran with LEASEGUARD_DISABLE=1, and whether on the
  // simulated GPU (it decides the hint when nothing was observed).
  bool recording_disabled = false;
  std::optional<bool> simulated;

  uint64_t leaked_bytes() const;
  uint64_t leaked_allocations() const;
  uint64_t reachable_bytes() const;
  uint64_t reachable_allocations() const;
  size_t lease_count() const;
  bool show_reachable = false;                    // --show-reachable: list them, not only count them
  std::optional<AuthorityLease> authority_lease;  // `lease start` only
};

// What a report could check: a report of 0 leaks means something only if allocations were
// seen. In order of precedence.
enum class Observed {
  Allocations,   // at least one allocation was recorded
  Disabled,      // recording was off (LEASEGUARD_DISABLE=1)
  NoDriver,      // no process loaded a GPU driver: none journaled (a process journals once
                 // it records something, or at its end if a driver is loaded), or each
                 // ended with none loaded
  NoAllocation,  // a driver was (or may have been) loaded, but no allocation was recorded
};
Observed observed(const Report &report);
std::string_view observed_name(Observed observed);  // "allocations", "disabled", ... (JSON)
// Nothing checked: what was observed and the hint that fits, one sentence; "" for Allocations.
std::string nothing_checked(const Report &report);

// Exit statuses collected by `leaseguard run` for each pid it reaped.
struct ExitStatus {
  std::optional<int> code;
  std::optional<int> signal;
};
using ExitStatuses = std::map<int32_t, ExitStatus>;

// Loads journals, applies exit statuses, orders processes by start time, and marks
// journals replaced by exec. Journals that cannot be read at all are errors.
bool load_report(const std::vector<std::string> &journals, const ExitStatuses &exits, Report &report,
                 std::string &error);

// The whole of a text file; false if it cannot be read.
bool read_text_file(const std::string &path, std::string &text);

// Reads a JSON report (schema leaseguard-report/1) and appends its processes to `report`.
bool load_report_json(const std::string &path, Report &report, std::string &error);

// Reads "<pid> code <n>" / "<pid> signal <n>" lines (`name` is for error messages).
bool read_exit_statuses(const std::string &path, ExitStatuses &exits, std::string &error);
bool parse_exit_statuses(const std::string &text, const std::string &name, ExitStatuses &exits, std::string &error);
bool write_exit_statuses(const std::string &path, const ExitStatuses &exits, std::string &error);

}  // namespace leaseguard::report
