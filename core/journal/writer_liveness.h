// Whether a journal's writer is still running.
//
// A journal without its ProcessEnd record was written by a process that died, or by one that
// is still running: only the first is a crash. The writer holds an exclusive lock (flock) on
// its journal from creating it to its end; the kernel drops it when the last descriptor of
// the file goes, at the process's end however it ends (SIGKILL included), and at exec, whose
// image writes a journal of its own. So a reader that cannot take a shared lock on a journal
// has a live writer, with no pid to misread (a reused pid, another pid namespace).
#pragma once

#include <string>

namespace leaseguard::journal {

// The writer's side: takes the lock on `fd`, the journal's descriptor. Never blocks; a file
// system without locks leaves the journal unlocked (read as a writer that is gone).
void hold_writer_lock(int fd) noexcept;

// The reader's side: true while the process that writes the journal at `path` runs.
bool writer_running(const std::string &path) noexcept;
// The same through `fd`, a descriptor of the journal the reader already holds.
bool writer_running_on(int fd) noexcept;

}  // namespace leaseguard::journal
