#include "lease_authority.h"

#include "api_ids.h"
#include "device_memory_check.h"
#include "lease_verdicts.h"
#include "mount_paths.h"
#include "pid_namespace.h"
#include "reclaim_request.h"

#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace leaseguard::authority {
namespace {

// While a lease's processes are being ended, how often the authority looks again.
constexpr uint64_t kTeardownPollMs = 50;
// How often metrics look for a live lease's processes that did not register (see metrics()).
constexpr uint64_t kMetricsWalkEveryMs = 60'000;
// How long the reclaim stage waits for the processes it asked to answer: under `reclaim`, the
// grace period (they run on after it); under `terminate`, no more than this (nor the grace
// period), so that the whole teardown stays within the grace period and a second of the
// lease's end. A process gives back what it holds in milliseconds (a driver free each); one
// that has not answered by then is ended by the stages after, and what it gave back later is
// still recorded.
constexpr uint64_t kReclaimBeforeSigtermMs = 500;
// How long the sigkill stage waits for its processes to be gone, at least (the grace period,
// if longer): a killed process ends at once unless it is stuck in the kernel (uninterruptible
// sleep in a driver, a frozen cgroup), or its exit is freeing much memory. Those still running
// after it survived: the verify stage says so, and the device what they hold.
constexpr uint64_t kSigkillWaitMs = 5'000;

Answer ok(std::vector<std::pair<std::string, std::string>> fields = {}) { return Answer{true, std::move(fields)}; }

bool may_manage(const LeaseState &lease, const Peer &peer) { return peer.uid == 0 || peer.uid == lease.owner; }

// The answer, cut to what one message may carry: the fields that do not fit are counted in a
// last more=N field.
std::string bounded(Answer &answer) {
  size_t bytes = 3, kept = 0;  // "ok\n"
  const size_t room = kMaxAnswerBytes - 32;
  while (kept < answer.fields.size()) {
    const size_t line = answer.fields[kept].first.size() + answer.fields[kept].second.size() + 2;
    if (bytes + line > room) break;
    bytes += line;
    ++kept;
  }
  const size_t left_out = answer.fields.size() - kept;
  answer.fields.resize(kept);
  if (left_out > 0) answer.fields.emplace_back("more", std::to_string(left_out));
  return format_answer(answer);
}

}  // namespace

bool LeaseAuthority::recover(uint64_t now_ms, std::vector<std::string> &warnings, std::string &error) {
  std::vector<LeaseState> kept;
  if (!store_.load(kept, next_id_, warnings, error)) return false;
  const std::string boot = current_boot_id(), stored_boot = store_.stored_boot_id();
  const bool rebooted = !stored_boot.empty() && stored_boot != boot;
  if (!store_.record_boot_id(boot, error)) return false;
  for (LeaseState &lease : kept) {
    const uint64_t id = lease.id;
    leases_[id] = std::move(lease);
    if (rebooted) {
      // Its processes ended with the boot, and its times were of that boot's clock.
      LeaseState &restored = leases_[id];
      restored.deadline_ms = 0;
      restored.stages.clear();
      if (restored.ended_by == EndReason::None) begin_ending(restored, EndReason::Exit, now_ms);
    }
  }
  return true;
}

LeaseState *LeaseAuthority::find(std::string_view name_or_id, uid_t asker) {
  // Names are each user's: another user's lease of the same name is not this one. Root,
  // which may manage any, names another user's lease where only one is live by that name.
  LeaseState *others = nullptr;
  size_t others_named = 0;
  for (auto &[id, lease] : leases_) {
    if (lease.ended() || lease.name != name_or_id) continue;
    if (lease.owner == asker) return &lease;
    others = &lease;
    ++others_named;
  }
  if (asker == 0 && others_named == 1) return others;
  return find_id(name_or_id);
}

LeaseState *LeaseAuthority::find_id(std::string_view text) {
  uint64_t id = 0;
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (problem != std::errc() || end != text.data() + text.size()) return nullptr;
  auto found = leases_.find(id);
  return found != leases_.end() ? &found->second : nullptr;
}

bool LeaseAuthority::record(LeaseState &lease, const std::string &line, std::string &error) {
  if (!store_.append(lease.id, line, error)) return false;
  lease.apply(line);
  return true;
}

std::string LeaseAuthority::handle(const Request &request, const Peer &peer, uint64_t now_ms) {
  switch (request.verb) {
    case Verb::Start: return grant(request, peer, now_ms);
    case Verb::Register: return join(request, peer);
    case Verb::List: return list(peer, now_ms);
    case Verb::Snapshot: return snapshot(peer, now_ms);
    case Verb::End:
    case Verb::Extend:
    case Verb::Exited:
    case Verb::Wait: break;
  }
  // A person names a lease by name or id; `lease start` (exited, wait) by the id it was granted.
  LeaseState *lease = request.verb == Verb::End || request.verb == Verb::Extend ? find(request.lease, peer.uid)
                                                                                : find_id(request.lease);
  if (lease == nullptr || !may_manage(*lease, peer))
    return error_answer("no lease '" + request.lease + "' of yours");  // another's is not told apart
  std::string error;
  if (request.verb == Verb::Extend) {
    if (lease->ended_by != EndReason::None) return error_answer("lease " + request.lease + " has ended");
    if (lease->deadline_ms == 0) return error_answer("lease " + request.lease + " has no time-to-live to extend");
    if (!record(*lease, deadline_line(lease->deadline_ms + request.ttl_ms), error)) return error_answer(error);
    return format_answer(
        ok({{"id", std::to_string(lease->id)},
            {"ttl_remaining_ms", std::to_string(lease->deadline_ms - std::min(lease->deadline_ms, now_ms))}}));
  }
  if (request.verb == Verb::Wait)  // the server holds the answer until the teardown is done
    return format_answer(ok({{"id", std::to_string(lease->id)}}));
  if (lease->ended_by == EndReason::None)
    begin_ending(*lease, request.verb == Verb::End ? EndReason::End : EndReason::Exit, now_ms);
  return format_answer(
      ok({{"id", std::to_string(lease->id)}, {"ended_by", std::string(end_reason_name(lease->ended_by))}}));
}

std::string LeaseAuthority::grant(const Request &request, const Peer &peer, uint64_t now_ms) {
  // A lease for another user (a scheduler's prolog, root, begins the job's): only root may.
  if (request.owner && *request.owner != peer.uid && peer.uid != 0)
    return error_answer("only root may begin a lease for another user");
  const uid_t owner = request.owner.value_or(peer.uid);
  // Names are checked against names only: a job may be named by a number (Slurm's job id)
  // that is also another lease's id. And against the owner's own: names are each user's, so
  // that no user can take a name another's job will ask for.
  const bool name_taken = std::any_of(leases_.begin(), leases_.end(), [&](const auto &entry) {
    return !entry.second.ended() && entry.second.name == request.name && entry.second.owner == owner;
  });
  if (!request.name.empty() && name_taken) return error_answer("a lease named '" + request.name + "' is live already");
  // Held by the asking process (`lease start`), or by nobody (`owner` given): then the
  // processes of the lease's mark count from now.
  std::optional<ProcessName> holder = ProcessName{0, boottime_ms() * sysconf(_SC_CLK_TCK) / 1000};
  if (!request.owner) holder = live_process(peer.pid);
  if (!holder) return error_answer("the asking process has ended");
  const uint64_t id = next_id_++;
  const std::string name = request.name.empty() ? std::to_string(id) : request.name;
  const std::vector<std::string> lines = {granted_line(id, name, owner, request.grace_ms, request.teardown),
                                          holder_line(holder->pid, holder->start_time),
                                          deadline_line(request.ttl_ms == 0 ? 0 : now_ms + request.ttl_ms)};
  std::string error;
  if (!store_.create(id, lines, error)) return error_answer(error);
  LeaseState &lease = leases_[id];
  for (const std::string &line : lines) lease.apply(line);
  return format_answer(ok({{"id", std::to_string(id)}, {"name", name}}));
}

std::string LeaseAuthority::join(const Request &request, const Peer &peer) {
  LeaseState *lease = find_id(request.lease);  // the preload has the id `lease start` was granted
  // A process joins only a lease of its own user (root's may join any): another user's
  // process could otherwise have itself torn down with a job, or hide in it.
  if (lease == nullptr || !may_manage(*lease, peer)) return error_answer("no lease '" + request.lease + "' of yours");
  if (lease->ended_by != EndReason::None) return error_answer("lease " + request.lease + " has ended");
  const std::optional<ProcessName> process = live_process(peer.pid);
  if (!process || process->start_time != request.start_time)
    return error_answer("the registering process is not the one that sent the request");
  std::string error;
  // Its journals by the daemon's names for them: a container's volume is mounted elsewhere
  // inside it (mount_paths.h). Translated now, while its mounts can be read.
  const std::string journal = path_in_own_mounts(process->pid, request.journal);
  if (!record(*lease, process_line(process->pid, process->start_time, journal), error)) return error_answer(error);
  return format_answer(ok({{"id", std::to_string(lease->id)}}));
}

std::string LeaseAuthority::list(const Peer &peer, uint64_t now_ms) const {
  Answer answer = ok();
  for (const auto &[id, lease] : leases_) {
    if (!may_manage(lease, peer)) continue;
    const uint64_t remaining = lease.deadline_ms == 0 ? 0 : lease.deadline_ms - std::min(lease.deadline_ms, now_ms);
    answer.fields.emplace_back("lease", std::to_string(id) + " " + lease.name + " " + std::to_string(lease.owner) +
                                            " " + std::string(teardown_name(lease.teardown)) + " " +
                                            (lease.deadline_ms == 0 ? "-" : std::to_string(remaining)) + " " +
                                            std::string(stage_name(lease.stage)) + " " +
                                            std::to_string(lease.processes.size()));
  }
  return bounded(answer);
}

// For `leaseguard top`: "lease=ID NAME TTL_MS|- STAGE" per live lease of the sender's, then
// "process=LEASE_ID PID DEVICE BYTES" per process and device holding memory (a process
// holding none: DEVICE and BYTES are "-"), and "checked=LEASE_ID PID LOST_BYTES CHECKS JOURNAL"
// per process that had a live check (what its last one found lost, how many it had, and its
// journal, where top reads which sites grew; the path is the rest of the line).
std::string LeaseAuthority::snapshot(const Peer &peer, uint64_t now_ms) {
  Answer answer = ok();
  for (auto &[id, lease] : leases_) {
    if (!may_manage(lease, peer) || lease.ended()) continue;
    const uint64_t remaining = lease.deadline_ms - std::min(lease.deadline_ms, now_ms);
    answer.fields.emplace_back("lease", std::to_string(id) + " " + lease.name + " " +
                                            (lease.deadline_ms == 0 ? "-" : std::to_string(remaining)) + " " +
                                            std::string(stage_name(lease.stage)));
    if (lease.ended_by == EndReason::None) running_members(lease);
    for (const LeaseProcess &process : lease.processes) {
      if (!still_runs({process.pid, process.start_time})) continue;
      const ProcessJournal *journal = journal_of(lease, process);
      const std::map<int, uint64_t> held =
          journal != nullptr ? journal->reader->live_bytes_per_device() : std::map<int, uint64_t>{};
      const std::string who = std::to_string(id) + " " + std::to_string(process.pid) + " ";
      if (held.empty()) answer.fields.emplace_back("process", who + "- -");
      for (const auto &[device, bytes] : held)
        answer.fields.emplace_back("process", who + std::to_string(device) + " " + std::to_string(bytes));
      if (journal != nullptr)
        if (const std::optional<uint64_t> lost = journal->reader->lost_bytes_at_last_check())
          answer.fields.emplace_back("checked", who + std::to_string(*lost) + " " +
                                                    std::to_string(journal->reader->checks()) + " " + journal->path);
    }
  }
  return bounded(answer);
}

void LeaseAuthority::begin_ending(LeaseState &lease, EndReason reason, uint64_t now_ms) {
  std::string error;
  // The state directory refusing a line (a full disk) must not keep a lease alive past its
  // end: the teardown goes on in memory, and a restart would begin it again.
  if (!record(lease, ending_line(reason, now_ms), error)) lease.apply(ending_line(reason, now_ms));
}

namespace {

// Where a process found (not registered) writes its journals: a process forked without an
// exec that could not register writes them beside its registered relatives', under its own
// pid as its namespace numbers it (PREFIX is RUN_DIR/RUN_ID.PID, or RUN_DIR/RUN_ID.PID-nsN in
// a PID namespace other than its run's: core/base/pid_namespace.h). Such a process is in its
// parent's namespace; a relative in another one says nothing of its name. Empty if no
// process of the lease that could say registered.
std::string derived_journal_prefix(const LeaseState &lease, pid_t pid) {
  const uint64_t namespace_id = pid_namespace_of(pid);
  for (const LeaseProcess &relative : lease.processes) {
    if (relative.journal.empty() || relative.journal[0] != '/') continue;
    const size_t dot = relative.journal.rfind('.');
    uint64_t relatives_namespace = 0;
    if (dot == std::string::npos ||
        !parse_journal_process_name(std::string_view(relative.journal).substr(dot + 1), relatives_namespace))
      continue;
    const std::string stem = relative.journal.substr(0, dot + 1);
    if (relatives_namespace != 0) {  // in a namespace of its own: the process must be in it too
      if (namespace_id != relatives_namespace) continue;
      return stem + std::to_string(innermost_pid(pid)) + "-ns" + std::to_string(namespace_id);
    }
    // In the run's namespace, which numbers processes as the daemon does where the relative's
    // name is its pid here, and otherwise as the innermost namespace of a process in it does.
    const bool numbered_here = relative.journal.substr(dot + 1) == std::to_string(relative.pid);
    return stem + std::to_string(numbered_here ? pid : innermost_pid(pid));
  }
  return "";
}

}  // namespace

LeaseAuthority::ProcessJournal *LeaseAuthority::journal_of(const LeaseState &lease, const LeaseProcess &process) {
  const std::string prefix = !process.journal.empty() && process.journal[0] == '/'
                                 ? process.journal
                                 : derived_journal_prefix(lease, process.pid);
  if (prefix.empty()) return nullptr;
  auto journal_name = [&](int image) { return journal_of_image(prefix, image); };
  auto exists = [](const std::string &path) {
    struct stat status {};
    return lstat(path.c_str(), &status) == 0;
  };
  ProcessJournal &journal = journals_[{process.pid, process.start_time}];
  // The newest image's journal: after an exec the process writes PREFIX.N.journal.
  int newest = journal.image;
  while (newest < 1000 && exists(journal_name(newest + 1))) ++newest;
  if (newest < 0 && exists(journal_name(0))) newest = 0;
  if (newest != journal.image) {
    auto reader = std::make_unique<journal::LiveBytesReader>();
    std::string error;
    if (newest >= 0 && reader->open(journal_name(newest), lease.owner, error)) {
      journal.reader = std::move(reader);
      journal.prefix = prefix;
      journal.path = journal_name(newest);
    }
    journal.error = error;
    journal.image = newest;
  }
  if (!journal.reader) return nullptr;
  journal.reader->update();
  return &journal;
}

std::map<int, uint64_t> LeaseAuthority::live_bytes(const LeaseState &lease, const LeaseProcess &process) {
  const ProcessJournal *journal = journal_of(lease, process);
  return journal != nullptr ? journal->reader->live_bytes_per_device() : std::map<int, uint64_t>{};
}

namespace {

// The names of `processes`, to look up in (a lease may have thousands).
std::set<std::pair<pid_t, uint64_t>> names_of(const std::vector<ProcessName> &processes) {
  std::set<std::pair<pid_t, uint64_t>> names;
  for (const ProcessName &process : processes) names.insert({process.pid, process.start_time});
  return names;
}

}  // namespace

void LeaseAuthority::ask_to_reclaim_all(LeaseState &lease) {
  if (lease.reclaim_asked) return;
  lease.reclaim_asked = true;
  // The process's leases end as the authority's did: expired, or ended (`lease end`, or the
  // command's exit, which is an end to the processes it left running).
  const uint32_t request =
      kControlReclaim | static_cast<uint32_t>(lease.ended_by == EndReason::Expiry ? EndedBy::Expiry : EndedBy::End);
  const std::set<std::pair<pid_t, uint64_t>> running = names_of(running_members(lease));
  for (const LeaseProcess &process : lease.processes) {
    if (running.count({process.pid, process.start_time}) == 0) continue;
    const ProcessJournal *journal = journal_of(lease, process);
    if (journal == nullptr) continue;  // it recorded nothing: nothing to give back
    if (journal->reader->reclaim_answer()) continue;
    std::string error;
    if (ask_to_reclaim(control_path_of_journal(journal->path), lease.owner, request, error))
      lease.asked_to_reclaim.push_back({process.pid, process.start_time});
  }
}

bool LeaseAuthority::reclaim_answered(LeaseState &lease) {
  const std::set<std::pair<pid_t, uint64_t>> running = names_of(running_members(lease));
  const std::set<std::pair<pid_t, uint64_t>> asked = names_of(lease.asked_to_reclaim);
  for (const LeaseProcess &process : lease.processes) {
    const std::pair<pid_t, uint64_t> name{process.pid, process.start_time};
    if (asked.count(name) == 0 || running.count(name) == 0) continue;  // not asked, or gone
    const ProcessJournal *journal = journal_of(lease, process);
    if (journal != nullptr && !journal->reader->reclaim_answer() && !journal->reader->process_ended()) return false;
  }
  return true;
}

void LeaseAuthority::record_freed(LeaseState &lease) {
  std::vector<std::string> lines;
  for (const LeaseProcess &process : lease.processes) {
    if (process.freed_bytes != 0) continue;  // recorded before a restart
    const ProcessJournal *journal = journal_of(lease, process);
    if (journal == nullptr || !journal->reader->reclaim_answer()) continue;
    const uint64_t freed = journal->reader->reclaim_answer()->freed_bytes;
    if (freed > 0) lines.push_back(freed_line(process.pid, freed));
    reclaimed_bytes_total_ += freed;
  }
  std::string error;
  for (const std::string &line : lines)
    if (!record(lease, line, error)) lease.apply(line);
}

void LeaseAuthority::record_held(LeaseState &lease) {
  std::string error;
  std::vector<std::string> lines;
  EndedLeaseMetrics ended{lease.name, lease.id, 0, 0};
  for (const LeaseProcess &process : lease.processes) {
    for (const auto &[device, bytes] : live_bytes(lease, process))
      if (bytes != 0) lines.push_back(held_line(process.pid, device, bytes));
    if (const ProcessJournal *journal = journal_of(lease, process)) {
      const EndedBytes verdicts = ended_bytes(journal->prefix, journal->image, lease.owner);
      ended.lost_bytes += verdicts.lost;
      ended.reachable_bytes += verdicts.reachable;
    }
  }
  lost_bytes_total_ += ended.lost_bytes;
  reachable_at_end_bytes_total_ += ended.reachable_bytes;
  recently_ended_.push_back(std::move(ended));
  if (recently_ended_.size() > kRecentlyEndedLeases) recently_ended_.pop_front();
  for (const std::string &line : lines)
    if (!record(lease, line, error)) lease.apply(line);
  for (const LeaseProcess &process : lease.processes) journals_.erase({process.pid, process.start_time});
}

void LeaseAuthority::enter_stage(LeaseState &lease, Stage stage, uint64_t now_ms) {
  std::string error;
  if (stage == Stage::Done) {
    if (lease.teardown != Teardown::Report) record_freed(lease);  // answers that came after their stage
    record_held(lease);
  }
  const std::string line = stage == Stage::Done ? ended_line(now_ms) : stage_line(stage, now_ms);
  if (!record(lease, line, error)) lease.apply(line);
  if (stage != Stage::Done) ++stage_counts_[std::string(stage_name(stage))];
}

std::vector<ProcessName> LeaseAuthority::running_members(LeaseState &lease) {
  std::vector<ProcessName> roots, members;
  if (lease.holder_pid > 0) roots.push_back({lease.holder_pid, lease.holder_start_time});
  for (const LeaseProcess &process : lease.processes) roots.push_back({process.pid, process.start_time});
  // Once a stage of its teardown, every process of the owner's is looked at for the mark
  // `lease start` puts in its command's environment: a process that left the lease's trees
  // (double-forked after its holder was killed, so reparented to init) and never registered
  // (no preload: a static program, LD_PRELOAD cleared) is found all the same. The mark is the
  // lease's id with this daemon's socket (another daemon's lease may have the same id), by
  // whatever path the process has for it (a container mounts it elsewhere).
  // Started after the holder: a pid's earlier life cannot be taken for the lease's.
  if (lease.ended_by != EndReason::None && lease.environment_walked != lease.stage && !socket_path_.empty()) {
    lease.environment_walked = lease.stage;
    for (const ProcessName &marked : processes_with_lease_mark(lease.id, socket_path_, lease.owner))
      if (marked.start_time >= lease.holder_start_time) roots.push_back(marked);
  }
  const ProcessName holder{lease.holder_pid, lease.holder_start_time};
  // Sets, not searches of the lists: a job of ten thousand processes is walked at every step
  // of its teardown.
  std::set<std::pair<pid_t, uint64_t>> found, known;
  for (const LeaseProcess &process : lease.processes) known.insert({process.pid, process.start_time});
  for (const ProcessName &root : roots) {
    // A registered process is usually below the holder already: its tree was walked then.
    if (found.count({root.pid, root.start_time}) != 0) continue;
    for (const ProcessName &process : process_tree(root))
      if (!(process == holder) && found.insert({process.pid, process.start_time}).second) members.push_back(process);
  }
  std::string error;
  for (const ProcessName &member : members) {
    if (known.count({member.pid, member.start_time}) != 0) continue;
    if (!record(lease, process_line(member.pid, member.start_time, "-"), error))
      lease.apply(process_line(member.pid, member.start_time, "-"));
  }
  return members;
}

// SIGKILL, repeated, to the processes left, until none is or its wait is over: those still
// running then survived (stuck in the kernel), and the verify stage says so.
uint64_t LeaseAuthority::advance_sigkill(LeaseState &lease, uint64_t now_ms, uint64_t stage_began) {
  const std::vector<ProcessName> running = running_members(lease);
  if (running.empty()) {
    enter_stage(lease, Stage::Verify, now_ms);
    return advance(lease, now_ms);
  }
  if (now_ms < stage_began + std::max(kSigkillWaitMs, lease.grace_ms)) {
    for (const ProcessName &process : running) signal_process(process, SIGKILL);
    return now_ms + kTeardownPollMs;
  }
  std::string error;
  for (const ProcessName &process : running)
    if (!record(lease, survived_line(process), error)) lease.apply(survived_line(process));
  enter_stage(lease, Stage::Verify, now_ms);
  return advance(lease, now_ms);
}

uint64_t LeaseAuthority::advance(LeaseState &lease, uint64_t now_ms) {
  if (lease.ended()) return 0;
  if (lease.ended_by == EndReason::None) {
    if (lease.deadline_ms == 0) return 0;
    if (now_ms < lease.deadline_ms) return lease.deadline_ms;
    begin_ending(lease, EndReason::Expiry, now_ms);
  }
  const uint64_t stage_began = lease.stages.empty() ? lease.ending_ms : lease.stages.back().began_ms;
  switch (lease.stage) {
    case Stage::Live:
      enter_stage(lease, lease.teardown == Teardown::Report ? Stage::Done : Stage::Reclaim, now_ms);
      return advance(lease, now_ms);
    case Stage::Reclaim: {
      // Each running process that has a control page is asked to give back what its leases
      // own, and answers in its journal; the stage ends when every one asked has answered or
      // is gone, or its time is up. A process that cannot be asked or does not answer in time
      // is ended by the stages after (terminate), or keeps what it holds, reported (reclaim).
      ask_to_reclaim_all(lease);
      const uint64_t wait_ms =
          lease.teardown == Teardown::Terminate ? std::min(kReclaimBeforeSigtermMs, lease.grace_ms) : lease.grace_ms;
      if (!reclaim_answered(lease) && now_ms < stage_began + wait_ms)
        return std::min(stage_began + wait_ms, now_ms + kTeardownPollMs);
      record_freed(lease);
      lease.reclaim_asked = false;
      enter_stage(lease, lease.teardown == Teardown::Terminate ? Stage::Sigterm : Stage::Done, now_ms);
      return advance(lease, now_ms);
    }
    case Stage::Sigterm: {
      const std::vector<ProcessName> running = running_members(lease);
      if (running.empty()) {
        enter_stage(lease, Stage::Verify, now_ms);
        return advance(lease, now_ms);
      }
      if (now_ms < stage_began + lease.grace_ms) {
        // Each process gets it once, new ones (forked since) too: many programs take a
        // second SIGTERM for "stop cleaning up". (A restarted daemon sends it once more.)
        for (const ProcessName &process : running)
          if (std::find(lease.sent_sigterm.begin(), lease.sent_sigterm.end(), process) == lease.sent_sigterm.end()) {
            signal_process(process, SIGTERM);
            lease.sent_sigterm.push_back(process);
          }
        return std::min(stage_began + lease.grace_ms, now_ms + kTeardownPollMs);
      }
      enter_stage(lease, Stage::Sigkill, now_ms);
      return advance(lease, now_ms);
    }
    case Stage::Sigkill: return advance_sigkill(lease, now_ms, stage_began);
    case Stage::Verify: {
      // The processes are gone (the stages before end only when none runs, or when SIGKILL's
      // wait is over: `survived`); the device is asked whether any of them still holds memory,
      // where it can be asked (NVML).
      std::vector<pid_t> pids;
      for (const LeaseProcess &process : lease.processes) pids.push_back(process.pid);
      const DeviceMemoryCheck check = check_device_memory(pids);
      std::string result = !check.checked ? "skipped " + check.skipped : check.held.empty() ? "clean" : "held";
      for (const HeldMemory &held : check.held)
        result += " " + std::to_string(held.pid) + ":" + std::to_string(held.device) + ":" +
                  (held.bytes == UINT64_MAX ? "?" : std::to_string(held.bytes));
      std::string error;
      if (!record(lease, verified_line(result), error)) lease.apply(verified_line(result));
      enter_stage(lease, Stage::Done, now_ms);
      return 0;
    }
    case Stage::Done: return 0;
  }
  return 0;
}

uint64_t LeaseAuthority::tick(uint64_t now_ms) {
  uint64_t next = 0;
  for (auto &[id, lease] : leases_) {
    const uint64_t wake = advance(lease, now_ms);
    if (wake != 0) next = next == 0 ? wake : std::min(next, wake);
  }
  return next;
}

bool LeaseAuthority::finished(uint64_t id) const {
  auto found = leases_.find(id);
  return found == leases_.end() || found->second.ended();
}

std::vector<std::pair<std::string, std::string>> LeaseAuthority::summary(uint64_t id) const {
  std::vector<std::pair<std::string, std::string>> fields;
  auto found = leases_.find(id);
  if (found == leases_.end()) return fields;
  const LeaseState &lease = found->second;
  fields.emplace_back("id", std::to_string(lease.id));
  fields.emplace_back("name", lease.name);
  fields.emplace_back("ended_by", std::string(end_reason_name(lease.ended_by)));
  fields.emplace_back("teardown", std::string(teardown_name(lease.teardown)));
  if (!lease.verification.empty()) fields.emplace_back("verify", lease.verification);
  for (const ProcessName &process : lease.survived) fields.emplace_back("survived", std::to_string(process.pid));
  for (const StageTime &stage : lease.stages)
    fields.emplace_back("stage", std::string(stage_name(stage.stage)) + " " +
                                     std::to_string(stage.began_ms - std::min(stage.began_ms, lease.ending_ms)));
  // "PID HELD FREED JOURNAL": HELD is DEVICE:BYTES,... (what its journal said it held at the
  // end) or "-" for nothing.
  for (const LeaseProcess &process : lease.processes) {
    std::string held;
    for (const auto &[device, bytes] : process.held)
      held += (held.empty() ? "" : ",") + std::to_string(device) + ":" + std::to_string(bytes);
    fields.emplace_back("process", std::to_string(process.pid) + " " + (held.empty() ? "-" : held) + " " +
                                       std::to_string(process.freed_bytes) + " " + process.journal);
  }
  return fields;
}

void LeaseAuthority::forget(uint64_t id) {
  std::string error;
  store_.remove(id, error);
  leases_.erase(id);
}

MetricsSnapshot LeaseAuthority::metrics(uint64_t now_ms) {
  MetricsSnapshot snapshot;
  std::set<pid_t> under_leases;
  for (auto &[id, lease] : leases_) {
    if (lease.ended_by != EndReason::None) continue;
    LeaseMetrics entry;
    // A process that could not register (its message was lost) is found below its relatives
    // by a walk of /proc: here at most once a minute per lease, since a walk of every lease
    // at every scrape is most of what an idle daemon with thousands of processes would do
    // (every step of a teardown walks anyway).
    if (lease.membership_walked_ms == 0 || now_ms >= lease.membership_walked_ms + kMetricsWalkEveryMs) {
      running_members(lease);
      lease.membership_walked_ms = now_ms;
    }
    if (lease.holder_pid > 0) under_leases.insert(lease.holder_pid);
    for (const LeaseProcess &process : lease.processes) {
      under_leases.insert(process.pid);
      const ProcessJournal *journal = journal_of(lease, process);
      if (journal == nullptr) {
        auto tried = journals_.find({process.pid, process.start_time});
        if (tried != journals_.end() && !tried->second.error.empty()) snapshot.complete = false;
        continue;
      }
      for (const auto &[device, bytes] : journal->reader->live_bytes_per_device())
        entry.live.push_back({process.pid, device, bytes, journal->reader->device_uuid(device)});
      if (const std::optional<uint64_t> lost = journal->reader->lost_bytes_at_last_check())
        entry.lost_bytes_at_last_check = entry.lost_bytes_at_last_check.value_or(0) + *lost;
    }
    entry.name = lease.name;
    entry.id = id;
    if (lease.deadline_ms != 0)
      entry.ttl_remaining_seconds =
          static_cast<double>(lease.deadline_ms - std::min(lease.deadline_ms, now_ms)) / 1000.0;
    snapshot.processes_registered += lease.processes.size();
    snapshot.leases.push_back(std::move(entry));
  }
  // What NVML sees held by processes in no live lease: memory nobody accounts for.
  const NodeGpus node = node_gpus();
  if (node.failed) snapshot.complete = false;
  if (node.read) {
    snapshot.gpus.emplace();
    for (const NodeGpu &gpu : node.gpus) {
      NodeGpuMetrics entry{gpu.index, gpu.uuid, 0, 0};
      for (const HeldMemory &held : gpu.held) {
        if (under_leases.count(held.pid) != 0) continue;
        ++entry.unaccounted_processes;
        if (held.bytes != UINT64_MAX) entry.unaccounted_bytes += held.bytes;
      }
      snapshot.gpus->push_back(std::move(entry));
    }
  }
  snapshot.teardown_stages = stage_counts_;
  snapshot.lost_bytes_total = lost_bytes_total_;
  snapshot.reachable_at_end_bytes_total = reachable_at_end_bytes_total_;
  snapshot.reclaimed_bytes_total = reclaimed_bytes_total_;
  snapshot.recently_ended.assign(recently_ended_.begin(), recently_ended_.end());
  timespec wall{};
  clock_gettime(CLOCK_REALTIME, &wall);
  snapshot.made_at_seconds = static_cast<double>(wall.tv_sec) + static_cast<double>(wall.tv_nsec) / 1e9;
  return snapshot;
}

}  // namespace leaseguard::authority
