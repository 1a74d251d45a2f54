// What the lease authority asks of the system about processes, read from /proc and done
// with signals. A process is named by its pid and its start time together, so a pid that
// the kernel reused after a job's process ended is never taken for it (and never signalled).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leaseguard::authority {

struct ProcessName {
  pid_t pid = 0;
  uint64_t start_time = 0;  // clock ticks after boot, /proc/PID/stat field 22
  bool operator==(const ProcessName &other) const { return pid == other.pid && start_time == other.start_time; }
};

// The process `pid` now, if it exists and has not exited (a zombie has: its memory and its
// device memory are released, only its exit status waits to be collected).
std::optional<ProcessName> live_process(pid_t pid);

// Whether `process` (pid and start time) still runs.
bool still_runs(const ProcessName &process);

// The children of `process`, of all its threads; empty if it no longer runs.
std::vector<ProcessName> children_of(const ProcessName &process);

// `process` and every descendant of it, found by walking children; `process` first.
std::vector<ProcessName> process_tree(const ProcessName &process);

// Sends `signal` to `process` if it still runs (checked through a pidfd where the kernel has
// them, so that a pid reused between the check and the kill is not hit). False if it has ended.
bool signal_process(const ProcessName &process, int signal);

// The user a process runs as (its real uid), if it runs.
std::optional<uid_t> process_owner(pid_t pid);

// Every process of user `owner` that runs and was started with a lease's mark in its
// environment (/proc/PID/environ: the environment it was started with, which children
// inherit): LEASEGUARD_AUTHORITY_LEASE=`lease_id` with LEASEGUARD_SOCKET naming the daemon's
// socket `socket_path`, by that path or by any path that is the same socket where the process
// sees it (resolved through /proc/PID/root, in its own mounts: a container that mounts the
// node's socket directory elsewhere). Those a lease's command started, found however far they
// moved from it (a daemon whose parents are gone, reparented to init). Walks all of /proc.
std::vector<ProcessName> processes_with_lease_mark(uint64_t lease_id, const std::string &socket_path, uid_t owner);

}  // namespace leaseguard::authority
