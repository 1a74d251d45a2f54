#include "authority_registration.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "authority_protocol.h"
#include "files.h"
#include "log.h"
#include "proc_stat.h"

namespace leaseguard::interpose {
namespace {

// The daemon answers at once; a process never waits on a wedged one longer than this.
constexpr int kAnswerTimeoutMs = 2000;

// Sends `message` and reads the answer; the answer's text, or why there is none.
bool ask_once(const std::string &path, const std::string &message, std::string &answer) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    answer = "socket path too long";
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    answer = std::strerror(errno);
    return false;
  }
  bool ok = connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0 &&
            send(fd, message.data(), message.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(message.size());
  if (!ok) answer = std::strerror(errno);
  pollfd readable{fd, POLLIN, 0};
  if (ok && poll(&readable, 1, kAnswerTimeoutMs) != 1) {
    ok = false;
    answer = "no answer in time";
  }
  if (ok) {
    char buffer[authority::kMaxMessageBytes];
    const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
    ok = got > 0;
    answer = ok ? std::string(buffer, static_cast<size_t>(got)) : "connection closed";
  }
  close(fd);
  return ok;
}

}  // namespace

void register_with_lease_authority(const Options &options) noexcept {
  const char *lease = std::getenv("LEASEGUARD_AUTHORITY_LEASE");
  if (lease == nullptr || *lease == '\0') return;
  try {
    const char *socket_variable = std::getenv("LEASEGUARD_SOCKET");
    const std::string socket = socket_variable != nullptr ? socket_variable : "";
    authority::Request request;
    request.verb = authority::Verb::Register;
    request.lease = lease;
    request.journal = absolute_path(options.out_dir) + "/" + (options.run_id.empty() ? "leaseguard" : options.run_id) +
                      "." + std::to_string(getpid());
    ProcStat self;
    request.start_time = read_proc_stat(getpid(), self) ? self.start_time : 0;
    std::string text, error;
    authority::Answer answer;
    if (socket.empty() || !ask_once(socket, authority::format_request(request), text)) {
      log_warning(
          "cannot register with the lease authority at %s: %s; lease %s will find this process only "
          "through its parent",
          socket.c_str(), text.c_str(), lease);
      return;
    }
    if (!authority::parse_answer(text, answer, error) || !answer.ok)
      log_warning("the lease authority refused this process in lease %s: %s", lease,
                  std::string(answer.field("message").value_or(error)).c_str());
  } catch (...) {
    log_warning("cannot register with the lease authority: out of memory");
  }
}

}  // namespace leaseguard::interpose
