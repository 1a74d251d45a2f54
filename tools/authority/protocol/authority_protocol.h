// The node lease authority's protocol: what `leaseguard lease ...`, `leaseguard top` and the
// preload say to `leaseguard daemon`, and what it answers. The only description of it.
//
// Transport: a Unix SOCK_SEQPACKET socket, one request and one answer per message (message
// boundaries are kept, so a message is never read half). The sender's identity is the
// socket's peer credentials, never anything a message claims.
//
// A message is text (a request at most kMaxMessageBytes, an answer kMaxAnswerBytes): a first
// line naming the protocol and its version and what is asked ("leaseguard-authority/1
// start"), then one "key=value" line per field. Keys are lower-case words; values have no
// control characters. Each key of a request comes at most once, and a key the verb does not
// take is refused: a daemon never guesses at what an older or newer client meant. An answer
// is "ok" or "error" on its first line, then its fields; a field that lists things (an answer
// to `list`) repeats its key, one line each.
//
// Versioning: the number after the slash changes when a verb or a field changes meaning; a
// daemon answers a request of another version with an error naming both, which the client
// prints.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control_page.h"  // the other channel: the daemon to a process of a lease

namespace leaseguard::authority {

inline constexpr int kProtocolVersion = 1;
inline constexpr std::string_view kProtocolName = "leaseguard-authority";
inline constexpr size_t kMaxMessageBytes = 4096;  // a request
// An answer (a list of many leases is long): what fits a Unix socket's default send buffer.
// A list that would be longer ends with a more=N field saying how many it left out.
inline constexpr size_t kMaxAnswerBytes = 160 * 1024;
inline constexpr size_t kMaxNameBytes = 128;
inline constexpr size_t kMaxPathBytes = 1024;
// A lease lasts at most a year, a grace period at most an hour: larger values are mistakes
// (a unit left out), refused before anything is granted.
inline constexpr uint64_t kMaxTtlMs = 366ull * 24 * 3600 * 1000;
inline constexpr uint64_t kMaxGraceMs = 3600ull * 1000;
inline constexpr uint64_t kDefaultGraceMs = 10'000;

// What the daemon does when a lease ends (its TTL, `lease end`): report what is still live,
// also ask each process to free it, or also end the processes (SIGTERM, the grace period,
// SIGKILL) and verify that the memory came back.
enum class Teardown : uint8_t { Report = 0, Reclaim = 1, Terminate = 2 };
std::string_view teardown_name(Teardown teardown) noexcept;
std::optional<Teardown> teardown_from_name(std::string_view name) noexcept;

enum class Verb : uint8_t {
  Start,     // a new lease: name, ttl_ms, teardown, grace_ms, owner; answers id
  Register,  // the sending process joins a lease: lease, journal, start_time
  List,      // the leases the sender may see; answers a lease= line each
  End,       // lease
  Extend,    // lease, ttl_ms (added to what remains)
  Exited,    // the client's command ended: lease, status (the lease ends with `exit`)
  Wait,      // lease; answered when its teardown is done, with what `lease start` reports
  Snapshot,  // the sender's live leases and what each process holds, for `leaseguard top`
};
std::string_view verb_name(Verb verb) noexcept;

struct Request {
  Verb verb = Verb::List;
  std::string name;     // Start: the lease's name (optional; the id names it otherwise)
  std::string lease;    // Register, End, Extend, Exited: a lease's name or id
  uint64_t ttl_ms = 0;  // Start: 0 is no TTL; Extend: how much longer
  Teardown teardown = Teardown::Report;
  uint64_t grace_ms = kDefaultGraceMs;
  std::string journal;      // Register: where the process's journals go, an absolute path prefix:
                            // PREFIX.journal, then PREFIX.N.journal for each exec'd image
  uint64_t start_time = 0;  // Register: the process's start time (/proc/PID/stat field 22), which with
                            // its pid names it even after the pid is reused
  int status = 0;           // Exited: the command's exit status as `run` reports it
  // Start: a lease with no holder, for this user (root may name any, others only themselves).
  // Its processes are those that register and their descendants, and those started with its
  // mark; it ends at its TTL or `end` (a scheduler's prolog begins it, its epilog ends it).
  // Absent: the sender holds the lease (`lease start`).
  std::optional<uid_t> owner;
};

// Checks `message` against the protocol; false with a one-line `error` (for the sender) if it
// is not a well-formed request of this version.
bool parse_request(std::string_view message, Request &request, std::string &error);
// The message for `request`; parse_request gives it back.
std::string format_request(const Request &request);

struct Answer {
  bool ok = false;
  std::vector<std::pair<std::string, std::string>> fields;  // in order; keys may repeat
  // The value of the first field named `key`, if any.
  std::optional<std::string_view> field(std::string_view key) const;
};

bool parse_answer(std::string_view message, Answer &answer, std::string &error);
std::string format_answer(const Answer &answer);
// An error answer with one field, message=`text` (control characters replaced).
std::string error_answer(std::string_view text);

// A lease name: 1..kMaxNameBytes bytes of letters, digits and . _ - @ : + (what schedulers
// use for job ids, all digits included). Where a request names a lease, a live lease of that
// name is meant before a lease whose id is that number.
bool valid_lease_name(std::string_view name) noexcept;

}  // namespace leaseguard::authority
