// The table of settings (option_table.h) and how each is applied.
#include "option_table.h"

#include <limits>

namespace leaseguard {
namespace {

bool apply_disable(std::string_view text, Options &options) {
  if (text == "1" || text == "true" || text == "yes") options.disabled = true;
  else if (!(text == "0" || text == "false" || text == "no" || text.empty())) return false;
  return true;
}

bool apply_log(std::string_view text, Options &options) {
  if (text == "quiet") options.log_level = LogLevel::Quiet;
  else if (text == "info") options.log_level = LogLevel::Info;
  else if (text == "debug") options.log_level = LogLevel::Debug;
  else return false;
  return true;
}

bool apply_out(std::string_view text, Options &options) {
  if (text.empty()) return false;
  options.out_dir = std::string(text);
  return true;
}

bool apply_ttl(std::string_view text, Options &options) {
  const std::optional<uint64_t> ms = parse_duration_ms(text);
  if (ms) options.ttl_ms = *ms;
  return ms.has_value();
}

bool apply_check_every(std::string_view text, Options &options) {
  const std::optional<uint64_t> ms = parse_duration_ms(text);
  if (ms && *ms == 0) return false;  // a check without end, never a pause
  if (ms) options.check_every_ms = *ms;
  return ms.has_value();
}

bool apply_deadline(std::string_view text, Options &options) {
  const std::optional<uint64_t> ns = parse_deadline_ns(text);
  if (ns) options.deadline_unix_ns = *ns;
  return ns.has_value();
}

bool apply_on_expiry(std::string_view text, Options &options) {
  const std::optional<Policy> policy = policy_from_name(text);
  if (policy) options.on_expiry = *policy;
  return policy.has_value();
}

bool apply_stack_depth(std::string_view text, Options &options) {
  const std::optional<long long> depth = parse_integer(text, 0, kMaxStackDepth);
  if (depth) options.stack_depth = static_cast<int>(*depth);
  return depth.has_value();
}

bool apply_journal(std::string_view text, Options &options) {
  const std::optional<JournalMode> mode = journal_mode_from_name(text);
  if (mode) options.journal_mode = *mode;
  return mode.has_value();
}

bool apply_reachability(std::string_view text, Options &options) {
  const std::optional<ReachabilityMode> mode = reachability_mode_from_name(text);
  if (mode) options.reachability = *mode;
  return mode.has_value();
}

bool apply_device_scan(std::string_view text, Options &options) {
  return parse_device_scan(text, options.device_scan_total_bytes, options.device_scan_allocation_bytes);
}

bool apply_run_id(std::string_view text, Options &options) {
  bool ok = !text.empty() && text.size() <= 64;
  for (char c : text)
    ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-');
  if (ok) options.run_id = std::string(text);
  return ok;
}

bool apply_run_pid_namespace(std::string_view text, Options &options) {
  const std::optional<long long> inode = parse_integer(text, 1, std::numeric_limits<long long>::max());
  if (inode) options.run_pid_namespace = static_cast<uint64_t>(*inode);
  return inode.has_value();
}

// Empty: none (as if unset).
bool apply_authority_lease(std::string_view text, Options &options) {
  if (text.empty()) return true;
  if (!parse_integer(text, 1, std::numeric_limits<long long>::max())) return false;
  options.authority_lease = std::string(text);
  return true;
}

constexpr OptionRow kRows[] = {
    {"LEASEGUARD_DISABLE", "", "1", "1 or 0", "0 (enabled)",
     "`1`: pure pass-through: nothing recorded, nothing written", false, apply_disable},
    {"LEASEGUARD_LOG", "", "LEVEL", "quiet, info or debug", "info", "`quiet`, `info` (default), `debug`", false,
     apply_log},
    {"LEASEGUARD_OUT", "", "DIR", "a directory", "leaseguard-out",
     "journal directory (default `./leaseguard-out`, created with mode 0700)", false, apply_out},
    {"LEASEGUARD_TTL", "--ttl", "DURATION", "a duration (examples: 250ms, 30s, 5m, 2h)", "no time-to-live",
     "time-to-live of the process lease: `250ms`, `30s`, `5m`, `2h`. At expiry, what the process holds is reported "
     "as leaked at expiry",
     false, apply_ttl},
    {"LEASEGUARD_CHECK_EVERY", "--check-every", "DURATION", "a duration (examples: 250ms, 30s, 5m, 2h)",
     "no periodic check",
     "a live check this often while the program runs (as `leaseguard_check()`, from leaseguard's own thread): what "
     "is lost and what still reachable at each is recorded, and `report` lists the checks; nothing ends",
     false, apply_check_every},
    {"LEASEGUARD_DEADLINE", "", "TIME", "@SECONDS or 2026-11-29T18:00:00Z",
     "no deadline (want @SECONDS or 2026-11-29T18:00:00Z)",
     "an absolute end for the process lease: `@1764439200` or `2025-11-29T18:00:00Z`", false, apply_deadline},
    {"LEASEGUARD_ON_EXPIRY", "--on-expiry", "POLICY", "report, reclaim or abort", "report",
     "`report` (default), `reclaim` (free what the lease still owns; late frees then succeed without reaching the "
     "driver) or `abort` (write the report, then SIGABRT, if something leaked)",
     false, apply_on_expiry},
    {"LEASEGUARD_STACK_DEPTH", "--stack-depth", "N", "a number from 0 to 64", "16 (allowed: 0..64)",
     "frames recorded per allocation, 0 to 64; 0 turns stacks off (default 16)", false, apply_stack_depth},
    {"LEASEGUARD_JOURNAL", "--journal", "MODE", "full or compact", "full (allowed: full, compact)",
     "`full` (default) keeps a record of every allocation; `compact` writes an allocation freed right away over with "
     "its thread's next one, so a process that allocates and frees in a loop keeps a journal the size of what is "
     "live. Leaks, late frees and the counts of allocations and frees are reported the same; peaks, timelines and "
     "double frees cover only the records kept",
     false, apply_journal},
    {"LEASEGUARD_REACHABILITY", "--reachability", "MODE", "exit, leases or off", "exit (allowed: exit, leases, off)",
     "`exit` (default): at exit, before static destructors, read the program's memory for pointers and tell leaked "
     "device memory (`direct`, `indirect`) from memory it still reaches (`reachable`: counted, not reported); also "
     "when the process lease's time-to-live or deadline ends it while the program runs. `leases`: every lease that "
     "ends while the program runs is classified at its end too. `off`: report every live allocation, `unchecked`, "
     "and track nothing more",
     false, apply_reachability},
    {"LEASEGUARD_DEVICE_SCAN", "--device-scan", "TOTAL[,PER]", "TOTAL[,PER_ALLOCATION] byte counts (K, M, G suffixes)",
     "64M,1M (want TOTAL[,PER_ALLOCATION] in bytes, K, M or G)",
     "device memory the classification reads back for pointers: TOTAL in all, PER of one allocation (default "
     "`64M,1M`); larger allocations are read as holding none, and the report says the scan was bounded",
     false, apply_device_scan},
    {"LEASEGUARD_RUN_ID", "", "ID", "up to 64 letters, digits and dashes", "none",
     "set by `leaseguard run`: tags the journals of one run", true, apply_run_id},
    {"LEASEGUARD_RUN_PID_NAMESPACE", "", "INODE", "a PID namespace's inode number", "none",
     "set by `leaseguard run`: its PID namespace; a process in another one names its journals with its own too", true,
     apply_run_pid_namespace},
    {"LEASEGUARD_AUTHORITY_LEASE", "", "ID", "a lease's id", "none (want a lease's id)",
     "set by `leaseguard lease start`: the node lease authority's lease the process belongs to", true,
     apply_authority_lease},
};

}  // namespace

std::span<const OptionRow> option_rows() noexcept { return kRows; }

const OptionRow *option_with_flag(std::string_view flag) noexcept {
  for (const OptionRow &row : kRows)
    if (!row.flag.empty() && row.flag == flag) return &row;
  return nullptr;
}

}  // namespace leaseguard
