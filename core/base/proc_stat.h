// A process's state and start time, from /proc/PID/stat: with its pid, the start time names a
// process even after the pid is reused. Shared by the preload (a process registering with the
// lease authority) and the authority (which checks and signals processes by that name).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace leaseguard {

struct ProcStat {
  char state = 0;           // R, S, D, Z (ended, not yet reaped), X, ...
  uint64_t start_time = 0;  // clock ticks after boot (field 22)
};

// False if there is no such process or its stat cannot be read. No allocation: safe to call
// from the preload's start-up. `pid` 0: this process, through /proc/self, which names it
// whatever PID namespace /proc was mounted for (its getpid() is its pid in its own, which
// in another namespace's /proc is another process).
bool read_proc_stat(pid_t pid, ProcStat &stat) noexcept;

}  // namespace leaseguard
