#include "authority_registration.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "authority_protocol.h"
#include "files.h"
#include "log.h"
#include "pid_namespace.h"
#include "proc_stat.h"

namespace leaseguard::interpose {
namespace {

// What a forked child needs to register itself: set once, at start, never changed after.
struct Registration {
  std::string socket, lease, journal_prefix;  // the journal is JOURNAL_PREFIX.PID (pid_namespace.h)
  uint64_t run_pid_namespace = 0;
};
Registration *g_registration = nullptr;

// A connected socket to the daemon at `path`, with `message` sent; -1 (errno set) if not.
// Never blocks: a daemon that stopped accepting leaves its listen queue full, and a blocking
// connect() would then hold every process start and fork of the job until it accepts again.
int connect_and_send(const std::string &path, const std::string &message) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) != 0 ||
      send(fd, message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(message.size())) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

authority::Request registration_of_this_process(const Registration &registration) {
  authority::Request request;
  request.verb = authority::Verb::Register;
  request.lease = registration.lease;
  request.journal = registration.journal_prefix + "." +
                    journal_process_name(getpid(), pid_namespace_of(), registration.run_pid_namespace);
  ProcStat self;
  request.start_time = read_proc_stat(0, self) ? self.start_time : 0;
  return request;
}

// A child forked without an exec registers too: a daemon double-forked from the job is
// reparented away from it, and found through its relatives only while they run. A child
// that cannot send is found through its parent, as before; no warning per child.
void register_forked_child() noexcept {
  const int saved_errno = errno;
  try {
    if (const Registration *registration = g_registration) {
      const int fd = connect_and_send(registration->socket,
                                      authority::format_request(registration_of_this_process(*registration)));
      if (fd >= 0) close(fd);
    }
  } catch (...) {
  }
  errno = saved_errno;
}

}  // namespace

void register_with_lease_authority(const Options &options) noexcept {
  const char *lease = std::getenv("LEASEGUARD_AUTHORITY_LEASE");
  if (lease == nullptr || *lease == '\0') return;
  try {
    const char *socket_variable = std::getenv("LEASEGUARD_SOCKET");
    const std::string socket = socket_variable != nullptr ? socket_variable : "";
    auto registration = std::make_unique<Registration>(Registration{
        socket, lease, absolute_path(options.out_dir) + "/" + (options.run_id.empty() ? "leaseguard" : options.run_id),
        options.run_pid_namespace});
    // Sent, not waited for: the daemon takes the registration from the queued message and the
    // socket's peer credentials, also after this end is closed, so a daemon that accepted but
    // does not answer (stopped, stuck on its disk) holds up no process start. What it refuses
    // (a lease that ended meanwhile) it refuses in its own log; the process is then found
    // through its relatives, as one that could not send.
    const int fd = socket.empty() ? -1
                                  : connect_and_send(
                                        socket, authority::format_request(registration_of_this_process(*registration)));
    if (fd < 0) {
      log_warning(
          "cannot register with the lease authority at %s: %s; lease %s will find this process only "
          "through its parent",
          socket.c_str(), socket.empty() ? "LEASEGUARD_SOCKET is not set" : std::strerror(errno), lease);
      return;
    }
    close(fd);
    g_registration = registration.release();  // never freed: a child forked at any time reads it
    pthread_atfork(nullptr, nullptr, register_forked_child);
  } catch (...) {
    log_warning("cannot register with the lease authority: out of memory");
  }
}

}  // namespace leaseguard::interpose
