#include "authority_socket.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace leaseguard::authority {
namespace {

std::string system_error(const std::string &what) { return what + ": " + std::strerror(errno); }

bool address_of(const std::string &path, sockaddr_un &address, std::string &error) {
  address = {};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    error = "socket path '" + path + "' is empty or too long";
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

std::string socket_path(const std::string &flag) {
  if (!flag.empty()) return flag;
  if (const char *variable = std::getenv("LEASEGUARD_SOCKET"); variable != nullptr && *variable != '\0')
    return variable;
  if (const char *runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/')
    return std::string(runtime) + "/leaseguard.sock";
  return std::string(kNodeSocketDirectory) + "/leaseguard.sock";
}

std::string socket_path_from_anywhere(const std::string &path) {
  if (path.empty() || path[0] == '/') return path;
  char here[4096];
  return getcwd(here, sizeof here) != nullptr ? std::string(here) + "/" + path : path;
}

int connect_to(const std::string &path, std::string &error) {
  sockaddr_un address;
  if (!address_of(path, address, error)) return -1;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = system_error("cannot make a socket");
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) != 0) {
    error = system_error("no lease authority answers at " + path + " (is `leaseguard daemon` running?)");
    close(fd);
    return -1;
  }
  return fd;
}

int listen_on(const std::string &path, const std::string &group, bool all_users, std::string &error) {
  sockaddr_un address;
  if (!address_of(path, address, error)) return -1;
  std::string ignored;
  if (const int live = connect_to(path, ignored); live >= 0) {
    close(live);
    error = "a lease authority already answers at " + path;
    return -1;
  }
  struct stat existing {};
  if (lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      error = path + " exists and is not a socket; not replaced";
      return -1;
    }
    unlink(path.c_str());  // left by a daemon that died
  }
  // The node's daemon makes its directory, as its system unit's RuntimeDirectory= does: run by
  // hand or by another init, /run/leaseguard is not there (and /run is root's alone).
  const std::string directory = path.substr(0, path.rfind('/'));
  if (geteuid() == 0 && directory == kNodeSocketDirectory && mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
    error = system_error("cannot make " + directory);
    return -1;
  }
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = system_error("cannot make a socket");
    return -1;
  }
  // Made 0600 from the start (no window in which others could connect), opened to the group after.
  const mode_t old_mask = umask(0177);
  const bool bound = bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0;
  umask(old_mask);
  if (!bound || listen(fd, 128) != 0) {
    error = system_error("cannot listen at " + path);
    close(fd);
    return -1;
  }
  if (geteuid() == 0 && all_users) chmod(path.c_str(), 0666);
  else if (geteuid() == 0 && !group.empty())
    if (const struct group *members = getgrnam(group.c_str()))
      if (chown(path.c_str(), 0, members->gr_gid) == 0) chmod(path.c_str(), 0660);
  return fd;
}

bool peer_of(int fd, Peer &peer) {
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return false;
  peer = Peer{credentials.pid, credentials.uid, credentials.gid};
  return true;
}

bool send_message(int fd, const std::string &message) {
  while (true) {
    const ssize_t sent = send(fd, message.data(), message.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    return sent == static_cast<ssize_t>(message.size());
  }
}

bool receive_message(int fd, std::string &message, bool &closed, size_t limit) {
  // One more byte than a message may have: a longer one is seen as such (MSG_TRUNC gives
  // its real length) and refused, never taken in part.
  std::string buffer(limit + 1, '\0');
  closed = false;
  while (true) {
    const ssize_t got = recv(fd, buffer.data(), buffer.size(), MSG_TRUNC | MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      closed = errno != EAGAIN && errno != EWOULDBLOCK;
      return false;
    }
    if (got == 0) {
      closed = true;
      return false;
    }
    message.assign(buffer.data(), std::min(static_cast<size_t>(got), buffer.size()));
    return true;
  }
}

bool ask(int fd, const std::string &request, std::string &answer, int timeout_ms, std::string &error) {
  if (!send_message(fd, request)) {
    error = system_error("cannot send to the lease authority");
    return false;
  }
  while (true) {
    pollfd waiting{fd, POLLIN, 0};
    const int ready = poll(&waiting, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      error = "the lease authority did not answer in time";
      return false;
    }
    bool closed = false;
    if (receive_message(fd, answer, closed, kMaxAnswerBytes)) return true;
    if (closed) {
      error = "the lease authority closed the connection";
      return false;
    }
  }
}

}  // namespace leaseguard::authority
