// The lease authority's logic: grants, joins, ends and extends leases for the requests it is
// given, and drives each ended lease through its teardown chain (docs/lease-authority.md):
//
//   report     the lease ends; what its processes hold is what it leaked
//   reclaim    each process is asked to free what the lease owns, then the lease ends
//   terminate  reclaim; SIGTERM to every process of the lease; after the grace period SIGKILL
//              to those left; then verify that they are gone and their memory came back
//
// Who belongs to a lease: every process that registered (the preload does, at start), and
// every descendant of those and of the lease's holder (the `lease start` client, a child
// subreaper, so double-forked daemons are reparented to it), found by walking /proc when the
// lease ends and at each step of its teardown. The holder itself is never signalled: it
// reports the lease.
//
// Every change is a line written to the state directory before it is acted on (lease_state.h),
// and every stage is safe to do twice, so a daemon restarted mid-teardown takes it up where
// it was. Time is passed in (CLOCK_BOOTTIME milliseconds), so tests choose it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "authority_protocol.h"
#include "lease_state.h"
#include "lease_store.h"
#include "live_bytes.h"
#include "metrics_text.h"
#include "process_table.h"

namespace leaseguard::authority {

// Who sent a request: the socket's peer credentials.
struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

class LeaseAuthority {
 public:
  explicit LeaseAuthority(LeaseStore &store) : store_(store) {}

  // The socket the daemon answers at, as `lease start` names it to its command
  // (LEASEGUARD_SOCKET): with the lease's id, the mark a teardown finds its processes by.
  void set_socket_path(std::string path) { socket_path_ = std::move(path); }

  // Takes up the leases the store kept (a restart): teardowns resume; leases of an earlier
  // boot end at once (their processes are gone). One warning per thing it skipped.
  bool recover(uint64_t now_ms, std::vector<std::string> &warnings, std::string &error);

  // Answers one request (an answer message, authority_protocol.h).
  std::string handle(const Request &request, const Peer &peer, uint64_t now_ms);

  // Moves every lease's teardown on as far as it can go at `now_ms`. Returns when it next
  // has something to do (0: nothing until a request comes).
  uint64_t tick(uint64_t now_ms);

  // Whether lease `id` ended and its teardown is done.
  bool finished(uint64_t id) const;
  // What `lease start` reports of lease `id` once it is done: an answer's fields.
  std::vector<std::pair<std::string, std::string>> summary(uint64_t id) const;
  // Forgets lease `id` (done and reported): its file goes.
  void forget(uint64_t id);

  // Reads the live leases' journals for what their processes hold now.
  MetricsSnapshot metrics(uint64_t now_ms);
  const std::map<uint64_t, LeaseState> &leases() const { return leases_; }

 private:
  // A live lease of `asker`'s by name (root: also another user's, where only one has it),
  // else any lease by id.
  LeaseState *find(std::string_view name_or_id, uid_t asker);
  // A lease by id only.
  LeaseState *find_id(std::string_view id);
  bool record(LeaseState &lease, const std::string &line, std::string &error);
  void begin_ending(LeaseState &lease, EndReason reason, uint64_t now_ms);
  void enter_stage(LeaseState &lease, Stage stage, uint64_t now_ms);
  // The lease's processes that still run, registered or found below them and the holder;
  // found ones are recorded.
  std::vector<ProcessName> running_members(LeaseState &lease);
  uint64_t advance(LeaseState &lease, uint64_t now_ms);
  uint64_t advance_sigkill(LeaseState &lease, uint64_t now_ms, uint64_t stage_began);

  struct ProcessJournal {
    int image = -1;  // which journal: 0 PREFIX.journal, N PREFIX.N.journal
    std::string prefix;
    std::string path;
    std::string error;  // why its newest journal, which exists, could not be opened
    std::unique_ptr<journal::LiveBytesReader> reader;
  };
  // The newest journal of `process` (an exec'd image writes a new one), read up to now; null
  // if it has none yet.
  ProcessJournal *journal_of(const LeaseState &lease, const LeaseProcess &process);
  // What `process` holds now per device, from its newest journal; empty if it has none yet.
  std::map<int, uint64_t> live_bytes(const LeaseState &lease, const LeaseProcess &process);
  // The reclaim stage: asks each running process with a control page to give back what its
  // leases own (once), and says whether every one asked has answered or is gone.
  void ask_to_reclaim_all(LeaseState &lease);
  bool reclaim_answered(LeaseState &lease);
  // Records what each process said it gave back (freed= lines).
  void record_freed(LeaseState &lease);
  // Records what each process held as the lease's teardown ends, and counts what the lease
  // lost and still held on purpose (lease_verdicts.h).
  void record_held(LeaseState &lease);

  std::string grant(const Request &request, const Peer &peer, uint64_t now_ms);
  std::string join(const Request &request, const Peer &peer);
  std::string list(const Peer &peer, uint64_t now_ms) const;
  std::string snapshot(const Peer &peer, uint64_t now_ms);

  LeaseStore &store_;
  std::string socket_path_;
  std::map<uint64_t, LeaseState> leases_;
  uint64_t next_id_ = 1;
  std::map<std::pair<pid_t, uint64_t>, ProcessJournal> journals_;  // by pid and start time
  std::map<std::string, uint64_t> stage_counts_;
  uint64_t lost_bytes_total_ = 0;
  uint64_t reachable_at_end_bytes_total_ = 0;
  uint64_t reclaimed_bytes_total_ = 0;
  std::deque<EndedLeaseMetrics> recently_ended_;  // the last kRecentlyEndedLeases, oldest first
};

}  // namespace leaseguard::authority
