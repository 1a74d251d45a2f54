// What the daemon knows of one lease, and the lines that change it.
//
// A lease's state is the result of its lines, in order: the daemon changes a lease only by
// writing a line to the lease's file (lease_store.h) and then applying the same line here,
// so a daemon restarted at any moment rebuilds exactly what it had acted on. A line is
// "key=value..." text, one event each:
//
//   granted=ID NAME OWNER_UID GRACE_MS TEARDOWN   the first line of every lease file
//   holder=PID START_TIME                         the client that asked for it (`lease start`):
//                                                 its descendants are the lease's, itself not;
//                                                 PID 0: none (a lease begun for its owner by
//                                                 another, root's prolog): START_TIME is when
//                                                 it began, in the same clock ticks
//   deadline=BOOTTIME_MS                          the lease ends then (0: no TTL); repeated
//                                                 by `extend`, the last one holds
//   process=PID START_TIME JOURNAL                a process joined (JOURNAL may have spaces;
//                                                 "-": found, not registered: no journal)
//   ending=ENDED_BY BOOTTIME_MS                   the teardown chain began
//   stage=STAGE BOOTTIME_MS                       a stage of the chain began
//   freed=PID BYTES                               what a process freed when asked (reclaim)
//   held=PID DEVICE BYTES                         what a process's journal said it held on a
//                                                 device when the lease's teardown was done
//   survived=PID START_TIME                       a process still running when the sigkill
//                                                 stage's wait ended (stuck in the kernel)
//   verified=RESULT                               what the device said in the verify stage:
//                                                 "clean", "held PID:DEVICE:BYTES ...", or
//                                                 "skipped WHY"
//   ended=BOOTTIME_MS                             the chain is done; the file may go
//
// Times are CLOCK_BOOTTIME milliseconds: they keep counting while the machine sleeps, as a
// lease's time does, and no clock step moves a deadline. A daemon restarted after a reboot
// finds the boot id changed (boot_id=, the store's own file) and ends every lease it had.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "authority_protocol.h"
#include "process_table.h"

namespace leaseguard::authority {

enum class Stage : uint8_t { Live = 0, Reclaim, Sigterm, Sigkill, Verify, Done };
std::string_view stage_name(Stage stage) noexcept;
std::optional<Stage> stage_from_name(std::string_view name) noexcept;

// Why a lease ended, as `lease start`'s report says it.
enum class EndReason : uint8_t { None = 0, Expiry, End, Exit };
std::string_view end_reason_name(EndReason reason) noexcept;

struct LeaseProcess {
  pid_t pid = 0;
  uint64_t start_time = 0;  // clock ticks after boot (/proc/PID/stat field 22)
  std::string journal;
  uint64_t freed_bytes = 0;      // what it freed when asked to reclaim
  std::map<int, uint64_t> held;  // device -> bytes its journal said it held at the end
};

struct StageTime {
  Stage stage = Stage::Live;
  uint64_t began_ms = 0;
};

struct LeaseState {
  uint64_t id = 0;
  std::string name;
  uid_t owner = 0;
  pid_t holder_pid = 0;
  uint64_t holder_start_time = 0;
  uint64_t grace_ms = kDefaultGraceMs;
  Teardown teardown = Teardown::Report;
  uint64_t deadline_ms = 0;  // CLOCK_BOOTTIME; 0: no TTL
  EndReason ended_by = EndReason::None;
  uint64_t ending_ms = 0;  // when the chain began
  std::vector<StageTime> stages;
  Stage stage = Stage::Live;
  uint64_t ended_ms = 0;
  std::string verification;           // the verified= line's value; empty: not verified
  std::vector<ProcessName> survived;  // still running after SIGKILL's wait
  std::vector<LeaseProcess> processes;
  // Not kept in the file: the processes sent SIGTERM by this daemon since it started.
  std::vector<ProcessName> sent_sigterm;
  // Not kept in the file: the processes this daemon asked to reclaim (a restarted daemon
  // asks again, which a process that answered does not see).
  std::vector<ProcessName> asked_to_reclaim;
  bool reclaim_asked = false;         // this daemon asked, in this stage
  uint64_t membership_walked_ms = 0;  // when metrics last looked for unregistered processes
  // The teardown stage in which every process was last looked at for the lease's mark in
  // its environment (running_members); none before the lease ends.
  std::optional<Stage> environment_walked;

  bool ended() const { return stage == Stage::Done; }
  // Applies one line; false (the state unchanged) if it is not a well-formed event.
  bool apply(std::string_view line);
};

// The lines that make each event (without the newline).
std::string granted_line(uint64_t id, std::string_view name, uid_t owner, uint64_t grace_ms, Teardown teardown);
std::string holder_line(pid_t pid, uint64_t start_time);
std::string deadline_line(uint64_t deadline_ms);
std::string process_line(pid_t pid, uint64_t start_time, std::string_view journal);
std::string ending_line(EndReason reason, uint64_t now_ms);
std::string stage_line(Stage stage, uint64_t now_ms);
std::string freed_line(pid_t pid, uint64_t bytes);
std::string held_line(pid_t pid, int device, uint64_t bytes);
std::string survived_line(const ProcessName &process);
std::string verified_line(std::string_view result);
std::string ended_line(uint64_t now_ms);

// CLOCK_BOOTTIME now, in milliseconds.
uint64_t boottime_ms() noexcept;

}  // namespace leaseguard::authority
