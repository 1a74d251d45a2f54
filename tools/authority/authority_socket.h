// The lease authority's Unix socket: where it is, how the daemon listens on it, and how a
// client asks one question and waits for its answer.
#pragma once

#include <sys/types.h>

#include <string>

#include "lease_authority.h"

namespace leaseguard::authority {

// Where the node's daemon listens by default; it makes the directory (0755) when run as root.
inline constexpr const char *kNodeSocketDirectory = "/run/leaseguard";

// The socket's path: `flag` (--socket) if given, else LEASEGUARD_SOCKET, else
// $XDG_RUNTIME_DIR/leaseguard.sock, else /run/leaseguard/leaseguard.sock.
std::string socket_path(const std::string &flag);

// `path` as it names the same socket from any directory (relative ones joined to the working
// directory): what `lease start` gives its command, whose processes may change directory,
// and the daemon finds them by (LeaseAuthority::set_socket_path).
std::string socket_path_from_anywhere(const std::string &path);

// Listens on `path` (SOCK_SEQPACKET, close-on-exec, non-blocking). The socket is 0600 for a
// user's daemon; a daemon run as root makes it 0660 with group `group` when that group
// exists, so that its members may ask for leases. A socket file left by a daemon that died is
// replaced; one that a live daemon answers on is an error. Root's daemon makes
// kNodeSocketDirectory when `path` is in it. `all_users`: root's socket is 0666 instead, for
// a batch node whose every user's jobs register (each may still act only on its own leases).
// Returns the descriptor or -1.
int listen_on(const std::string &path, const std::string &group, bool all_users, std::string &error);

// Who is at the other end of a connected socket.
bool peer_of(int fd, Peer &peer);

// Connects to the daemon at `path`; -1 with `error` if none answers.
int connect_to(const std::string &path, std::string &error);

// Sends `request` on a connected socket and waits for the answer (timeout_ms < 0: as long as
// it takes); false with `error` if the daemon went away or did not answer in time.
bool ask(int fd, const std::string &request, std::string &answer, int timeout_ms, std::string &error);

// Receives one message of at most `limit` bytes (a longer one is cut to limit + 1, so that
// its parser refuses it); false when there is none yet or the peer is gone (`closed` set).
bool receive_message(int fd, std::string &message, bool &closed, size_t limit = kMaxMessageBytes);

// Sends one message; false if it could not be sent whole.
bool send_message(int fd, const std::string &message);

}  // namespace leaseguard::authority
