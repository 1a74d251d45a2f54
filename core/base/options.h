// All of leaseguard's run-time settings, parsed once from the environment into one struct.
//
// A bad value never stops the host program: it yields a warning naming the variable and
// the value used instead. The parsers are shared with the CLI, which rejects bad flags.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api_ids.h"

namespace leaseguard {

enum class LogLevel { Quiet = 0, Info = 1, Debug = 2 };

// What the journal keeps of allocations freed soon after they were made: every one (full),
// or, in a loop that allocates and frees, one record per thread that later ones are
// written over (compact: see journal::kHeaderCompact). Leak reports are the same in both.
enum class JournalMode { Full = 0, Compact = 1 };

// When live allocations are classified as reachable, indirectly or directly lost
// (core/reachability/reachability.h): at the process lease's end (exit; also when its time-to-live or
// deadline ends it while the program runs), also at every lease's end (leases), or never (off).
enum class ReachabilityMode { Exit = 0, Off = 1, Leases = 2 };

// How much device memory the classification copies back to read pointers in it (a real
// GPU's memory is not host memory): in all, and of one allocation. Larger ones are read as
// holding no pointers, and the report says the scan was bounded.
inline constexpr uint64_t kDefaultDeviceScanTotalBytes = 64ull << 20;
inline constexpr uint64_t kDefaultDeviceScanAllocationBytes = 1ull << 20;

inline constexpr int kDefaultStackDepth = 16;
inline constexpr int kMaxStackDepth = 64;

struct Options {
  bool disabled = false;  // LEASEGUARD_DISABLE=1: pure pass-through
  std::string out_dir = "leaseguard-out";
  uint64_t ttl_ms = 0;                       // process lease time-to-live; 0: none
  uint64_t check_every_ms = 0;               // LEASEGUARD_CHECK_EVERY: a live check this often; 0: none
  std::optional<uint64_t> deadline_unix_ns;  // LEASEGUARD_DEADLINE: the process lease ends then
  Policy on_expiry = Policy::Report;
  int stack_depth = kDefaultStackDepth;
  JournalMode journal_mode = JournalMode::Full;  // LEASEGUARD_JOURNAL: full | compact
  LogLevel log_level = LogLevel::Info;
  ReachabilityMode reachability = ReachabilityMode::Exit;           // LEASEGUARD_REACHABILITY: exit | off
  uint64_t device_scan_total_bytes = kDefaultDeviceScanTotalBytes;  // LEASEGUARD_DEVICE_SCAN: TOTAL[,PER]
  uint64_t device_scan_allocation_bytes = kDefaultDeviceScanAllocationBytes;
  std::string run_id;  // set by `leaseguard run` to tell its journals apart
  // LEASEGUARD_RUN_PID_NAMESPACE, set by `leaseguard run`: its PID namespace; a process in
  // another names its journals with its own too (pid_namespace.h). 0: unknown.
  uint64_t run_pid_namespace = 0;
  // LEASEGUARD_AUTHORITY_LEASE, set by `leaseguard lease start`: the id of the node lease
  // authority's lease the process belongs to (docs/lease-authority.md); empty: none.
  std::string authority_lease;
};

// Reads LEASEGUARD_* through `lookup` (getenv in production). Each problem found is
// appended to `warnings` as one line: a bad value (naming the variable and the value used
// instead), or a deadline already past at `now_unix_ns`.
using EnvLookup = std::function<const char *(const char *)>;
Options parse_options(const EnvLookup &lookup, std::vector<std::string> &warnings, uint64_t now_unix_ns = 0);

// CLOCK_REALTIME now, in nanoseconds since the epoch: what a deadline is compared with.
uint64_t wall_clock_ns() noexcept;

// True where `leaseguard run` started the process (LEASEGUARD_RUN_ID is set): run has read
// the same variables and said once what is wrong with them, so the processes of the run
// do not say it again, each of them.
bool settings_checked_by_run(const Options &options);

// A byte count: digits with an optional K, M, G or T (powers of 1024; "KiB" etc. too).
std::optional<uint64_t> parse_byte_count(std::string_view text);

// "exit", "leases" or "off".
std::optional<ReachabilityMode> reachability_mode_from_name(std::string_view name);

// "TOTAL" or "TOTAL,PER" (byte counts) for LEASEGUARD_DEVICE_SCAN and --device-scan.
bool parse_device_scan(std::string_view text, uint64_t &total, uint64_t &per_allocation);

// "250ms", "30s", "5m", "2h", or "0". Returns milliseconds, or nullopt if malformed or
// too large to represent.
std::optional<uint64_t> parse_duration_ms(std::string_view text);

// An absolute time: "@SECONDS" since the Unix epoch (fraction allowed; @0 is the epoch
// itself), or RFC 3339 "2026-11-29T18:00:00Z" / "2026-11-29T18:00:00.5+01:00". Returns
// nanoseconds since the epoch, or nullopt if malformed, out of range, or not a date of the
// calendar (2025-02-31).
std::optional<uint64_t> parse_deadline_ns(std::string_view text);

// "full" or "compact"; nullopt otherwise.
std::optional<JournalMode> journal_mode_from_name(std::string_view name);

// A decimal integer in [min, max], nothing else.
std::optional<long long> parse_integer(std::string_view text, long long min, long long max);

}  // namespace leaseguard
