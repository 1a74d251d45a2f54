// `leaseguard daemon`: the node lease authority's process. One thread, one poll loop over
// its Unix socket, its clients, its metrics endpoint and its signals; it sleeps until a
// request comes or a lease has something due, so an idle daemon costs nothing.
#pragma once

#include <string>

namespace leaseguard::authority {

struct DaemonOptions {
  std::string socket;                // --socket; empty: socket_path's default
  std::string state_directory;       // --state; empty: default_state_directory()
  std::string metrics_address;       // --metrics HOST:PORT; empty: none
  std::string textfile;              // --textfile PATH; empty: none
  std::string group = "leaseguard";  // a system daemon's socket is 0660 with this group, if it exists
  bool all_users = false;            // --all-users: root's socket is 0666 (a batch node)
};

// $XDG_STATE_HOME/leaseguard (or ~/.local/state/leaseguard) for a user, /var/lib/leaseguard for root.
std::string default_state_directory();

// Runs until SIGTERM or SIGINT; leases stay in the state directory for the next start.
// Returns the exit status: 0, or 2 when it could not start (its one-line reason on stderr).
int run_daemon(const DaemonOptions &options);

}  // namespace leaseguard::authority
