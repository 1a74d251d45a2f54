// A path as another process names it, as the daemon can open it.
//
// A job in a container names its journals by its own mounts: a volume the node shares with it
// (a Kubernetes hostPath, a Slurm container's bind mount) is mounted at one place inside and
// lies at another on the node. The daemon, on the node, reads the journals and writes their
// control pages by its own names. A registering process's paths are translated once, while it
// runs (its /proc/PID/mountinfo is there only then): from the mount that holds the path in the
// process's view to the same file system's mount in the daemon's, through the directory each
// mount shows of it (mountinfo's root field).
#pragma once

#include <sys/types.h>

#include <string>

namespace leaseguard::authority {

// `path` (absolute, as process `pid` names it) as this process names it: `path` itself where
// both share their mounts, or where no mount of this process shows that place (then the path
// is kept as given, and reads of it find nothing).
std::string path_in_own_mounts(pid_t pid, const std::string &path);

}  // namespace leaseguard::authority
