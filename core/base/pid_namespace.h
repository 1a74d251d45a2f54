// Which PID namespace a process is in, and the name its journals carry for it.
//
// A pid names a process only within its PID namespace: two processes of one run, each
// started in a namespace of its own (`unshare --pid --fork`, a container), are both pid 1.
// Named by pid alone, their journals were RUN.1 and, for the second, RUN.1.1, which reads as
// the first one's image after an exec: the report and the lease authority took the two for
// one process. So a process in a PID namespace other than its run's says which one in its
// journals' name. `leaseguard run` gives its own namespace (LEASEGUARD_RUN_PID_NAMESPACE);
// without it, names are the pid alone, and the journal's header tells the two apart.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace leaseguard {

// The inode of /proc/PID/ns/pid (of this process where `pid` is 0), which names the
// namespace; 0 where /proc does not say (not mounted, not permitted).
uint64_t pid_namespace_of(pid_t pid = 0) noexcept;

// Process `pid`'s pid in its own (innermost) PID namespace, which is what its getpid() says:
// the last NSpid field of /proc/PID/status; `pid` itself where that cannot be read.
pid_t innermost_pid(pid_t pid);

// The part of a journal's name after the run id: "PID", or "PID-nsNAMESPACE" where the
// process's namespace is known and not the run's (both known).
std::string journal_process_name(pid_t pid, uint64_t namespace_id, uint64_t run_namespace_id);

// Whether `name` is such a part (digits, then optionally "-ns" and digits); where it is,
// `namespace_id` is the namespace it names, 0 for none.
bool parse_journal_process_name(std::string_view name, uint64_t &namespace_id) noexcept;

}  // namespace leaseguard
