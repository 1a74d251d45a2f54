#include "daemon_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "authority_socket.h"
#include "lease_authority.h"
#include "lease_store.h"
#include "metrics_text.h"

namespace leaseguard::authority {
namespace {

// Bounds that keep a flood of clients from wedging the daemon: each costs a descriptor and a
// slot; beyond them new connections are closed at once.
constexpr size_t kMaxClients = 4096;
// One user's connections at once: a user who opens more loses its own oldest idle ones, so
// no local user can take the daemon's descriptors or slots from the others.
constexpr size_t kMaxClientsPerUser = 1024;
constexpr size_t kMaxMetricsConnections = 64;
constexpr size_t kMaxHttpRequestBytes = 8192;
// A metrics connection that has not sent its request by then is closed.
constexpr uint64_t kHttpDeadlineMs = 5000;
// How often the textfile is rewritten.
constexpr uint64_t kTextfileEveryMs = 5000;
// A client that neither asks nor waits for a teardown is closed after this: each costs a
// slot, and the daemon's clients (lease start, the preload's registration, lease and top)
// ask at once and go.
constexpr uint64_t kIdleClientMs = 30'000;
// Refused registrations said in the log before only every thousandth is.
constexpr uint64_t kLoggedRefusals = 20;
// An ended lease whose holder never asked for its report is forgotten after this.
constexpr uint64_t kEndedRetentionMs = 10 * 60 * 1000;

struct Client {
  int fd = -1;
  Peer peer;
  uint64_t waiting_for = 0;       // a lease id whose teardown it waits for; 0: none
  uint64_t idle_deadline_ms = 0;  // closed then unless it waits
};

struct MetricsConnection {
  int fd = -1;
  std::string request;
  uint64_t deadline_ms = 0;
};

// "HOST:PORT" (IPv4) into a listening TCP socket; -1 with `error`.
int listen_tcp(const std::string &address, std::string &error) {
  const size_t colon = address.rfind(':');
  int port = 0;
  const std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? "" : address.substr(colon + 1);
  auto [end, problem] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  sockaddr_in socket_address{};
  socket_address.sin_family = AF_INET;
  socket_address.sin_port = htons(static_cast<uint16_t>(port));
  // Port 0: one the kernel picks (the daemon says which).
  if (problem != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535 ||
      inet_pton(AF_INET, host.empty() ? "0.0.0.0" : host.c_str(), &socket_address.sin_addr) != 1) {
    error = "--metrics wants HOST:PORT (an IPv4 address and a port), not '" + address + "'";
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int yes = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr *>(&socket_address), sizeof socket_address) != 0 ||
      listen(fd, 64) != 0) {
    error = "cannot listen for metrics at " + address + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// The answer to one HTTP request (only GET /metrics is served).
std::string http_answer(const std::string &request, const std::string &metrics) {
  const bool metrics_asked = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  if (!metrics_asked)
    return "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nConnection: "
           "close\r\n\r\nnot found\n";
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
         std::to_string(metrics.size()) + "\r\nConnection: close\r\n\r\n" + metrics;
}

void write_all_blocking(int fd, const std::string &text) {
  // The connection is non-blocking; a metrics page is small and the kernel's buffer takes it.
  // A client that reads nothing loses its answer, never the daemon's time.
  size_t done = 0;
  for (int attempts = 0; done < text.size() && attempts < 100; ++attempts) {
    const ssize_t sent = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (sent > 0) done += static_cast<size_t>(sent);
    else if (sent < 0 && errno != EINTR && errno != EAGAIN) break;
    else if (sent < 0 && errno == EAGAIN) {
      pollfd writable{fd, POLLOUT, 0};
      if (poll(&writable, 1, 10) <= 0) break;
    }
  }
}

class Server {
 public:
  explicit Server(const DaemonOptions &options) : options_(options), authority_(store_) {}

  int run() {
    std::string error;
    const std::string state = options_.state_directory.empty() ? default_state_directory() : options_.state_directory;
    std::vector<std::string> warnings;
    if (!store_.open(state, error) || !authority_.recover(boottime_ms(), warnings, error)) return fail(error);
    for (const std::string &warning : warnings)
      std::fprintf(stderr, "leaseguard daemon: warning: %s\n", warning.c_str());
    // As many descriptors as the daemon may have: each client costs one (the units raise the
    // hard limit too, LimitNOFILE).
    if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const std::string path = socket_path(options_.socket);
    authority_.set_socket_path(socket_path_from_anywhere(path));
    listener_ = listen_on(path, options_.group, options_.all_users, error);
    if (listener_ < 0) return fail(error);
    if (!options_.metrics_address.empty() && (metrics_listener_ = listen_tcp(options_.metrics_address, error)) < 0)
      return fail(error);
    std::string metrics_at;
    if (metrics_listener_ >= 0) {
      sockaddr_in bound{};
      socklen_t size = sizeof bound;
      char host[INET_ADDRSTRLEN] = "?";
      if (getsockname(metrics_listener_, reinterpret_cast<sockaddr *>(&bound), &size) == 0)
        inet_ntop(AF_INET, &bound.sin_addr, host, sizeof host);
      metrics_at =
          ", metrics at http://" + std::string(host) + ":" + std::to_string(ntohs(bound.sin_port)) + "/metrics";
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, nullptr);
    signal_fd_ = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);
    std::fprintf(stderr, "leaseguard daemon: listening at %s%s, state in %s, %zu lease(s) taken up\n", path.c_str(),
                 metrics_at.c_str(), state.c_str(), authority_.leases().size());
    std::fflush(stderr);
    loop();
    unlink(path.c_str());
    return 0;
  }

 private:
  int fail(const std::string &error) {
    std::fprintf(stderr, "leaseguard daemon: error: %s\n", error.c_str());
    return 2;
  }

  void loop() {
    uint64_t next_textfile = 0;
    while (!stopping_) {
      const uint64_t now = boottime_ms();
      uint64_t wake = authority_.tick(now);
      answer_waiters();
      forget_old_leases(now);
      if (!options_.textfile.empty()) {
        if (now >= next_textfile) {
          std::string error;
          if (!write_textfile(options_.textfile, render_metrics(authority_.metrics(now)), error))
            std::fprintf(stderr, "leaseguard daemon: warning: %s\n", error.c_str());
          next_textfile = now + kTextfileEveryMs;
        }
        wake = wake == 0 ? next_textfile : std::min(wake, next_textfile);
      }
      for (const MetricsConnection &connection : metrics_connections_)
        wake = wake == 0 ? connection.deadline_ms : std::min(wake, connection.deadline_ms);
      for (const Client &client : clients_)
        if (client.waiting_for == 0)
          wake = wake == 0 ? client.idle_deadline_ms : std::min(wake, client.idle_deadline_ms);
      std::vector<pollfd> watched = {{listener_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      if (metrics_listener_ >= 0) watched.push_back({metrics_listener_, POLLIN, 0});
      const size_t first_client = watched.size();
      for (const Client &client : clients_) watched.push_back({client.fd, POLLIN, 0});
      const size_t first_metrics = watched.size();
      for (const MetricsConnection &connection : metrics_connections_) watched.push_back({connection.fd, POLLIN, 0});
      const int timeout = wake == 0 ? -1 : static_cast<int>(std::min<uint64_t>(wake - std::min(wake, now), 60'000));
      if (poll(watched.data(), watched.size(), timeout) < 0 && errno != EINTR) break;
      if (watched[1].revents != 0) stopping_ = true;
      if (watched[0].revents & POLLIN) accept_clients();
      if (metrics_listener_ >= 0 && (watched[2].revents & POLLIN)) accept_metrics();
      serve_clients(watched, first_client, first_metrics - first_client, boottime_ms());
      serve_metrics(watched, first_metrics, boottime_ms());
    }
  }

  void accept_clients() {
    while (true) {
      int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0 && (errno == EMFILE || errno == ENFILE) && close_oldest_idle(busiest_user()))
        fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        refuse_one_without_descriptors();
        return;
      }
      if (fd < 0) return;
      Client client;
      client.fd = fd;
      client.idle_deadline_ms = boottime_ms() + kIdleClientMs;
      // Room for the longest answer (a list of many leases) in one message.
      const int room = static_cast<int>(kMaxAnswerBytes + 4096);
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
      if (!peer_of(fd, client.peer) || !make_room_for(client.peer.uid)) {
        close(fd);
        continue;
      }
      clients_.push_back(client);
    }
  }

  // Room for one more client of `uid`: the user's own oldest idle connection goes where the
  // user is at its bound; the busiest user's where all are. False if nothing could go (every
  // such connection waits for a teardown).
  bool make_room_for(uid_t uid) {
    if (connections_of(uid) >= kMaxClientsPerUser && !close_oldest_idle(uid)) return false;
    return open_clients() < kMaxClients || close_oldest_idle(busiest_user());
  }

  size_t connections_of(uid_t uid) const {
    return static_cast<size_t>(std::count_if(clients_.begin(), clients_.end(), [&](const Client &client) {
      return client.fd >= 0 && client.peer.uid == uid;
    }));
  }
  size_t open_clients() const {
    return static_cast<size_t>(
        std::count_if(clients_.begin(), clients_.end(), [](const Client &client) { return client.fd >= 0; }));
  }
  uid_t busiest_user() const {
    std::map<uid_t, size_t> counts;
    for (const Client &client : clients_)
      if (client.fd >= 0) ++counts[client.peer.uid];
    uid_t busiest = 0;
    size_t most = 0;
    for (const auto &[uid, count] : counts)
      if (count > most) std::tie(busiest, most) = std::tie(uid, count);
    return busiest;
  }

  // Closes `uid`'s oldest connection that waits for nothing and has nothing unread (a
  // registration sent and not yet read is kept); in place (fd -1), since serve_clients pairs
  // clients with what was polled.
  bool close_oldest_idle(uid_t uid) {
    for (Client &client : clients_) {
      int unread = 0;
      if (client.fd < 0 || client.peer.uid != uid || client.waiting_for != 0 ||
          (ioctl(client.fd, FIONREAD, &unread) == 0 && unread > 0))
        continue;
      close(client.fd);
      client.fd = -1;
      return true;
    }
    return false;
  }

  // Out of descriptors with nothing to close: the connection waiting first is taken with the
  // descriptor kept spare for this and closed at once, so that it does not wait in the
  // backlog and wake every poll.
  void refuse_one_without_descriptors() {
    if (spare_fd_ < 0) return;
    close(spare_fd_);
    const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) close(fd);
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }

  // The first `polled` clients were polled (from `watched[first]` on); later ones were
  // accepted since.
  void serve_clients(const std::vector<pollfd> &watched, size_t first, size_t polled, uint64_t now) {
    std::vector<Client> kept;
    for (size_t i = 0; i < polled; ++i) {
      Client &client = clients_[i];
      if (client.fd < 0) continue;  // closed to make room (make_room_for)
      const short events = watched[first + i].revents;
      bool keep = true;
      if (events & POLLIN) {
        keep = serve(client);
        client.idle_deadline_ms = now + kIdleClientMs;
      } else if (events & (POLLHUP | POLLERR | POLLNVAL)) {
        keep = false;
      } else if (client.waiting_for == 0 && now >= client.idle_deadline_ms) {
        keep = false;
      }
      if (keep) kept.push_back(client);
      else close(client.fd);
    }
    for (size_t i = polled; i < clients_.size(); ++i)
      if (clients_[i].fd >= 0) kept.push_back(clients_[i]);
    clients_ = std::move(kept);
  }

  // One request from `client`; false when the connection is done with.
  bool serve(Client &client) {
    std::string message;
    bool closed = false;
    if (!receive_message(client.fd, message, closed)) return !closed;
    Request request;
    std::string error;
    if (!parse_request(message, request, error)) {
      send_message(client.fd, error_answer(error));
      return true;
    }
    const std::string answer = authority_.handle(request, client.peer, boottime_ms());
    Answer parsed;
    if (request.verb == Verb::Register && parse_answer(answer, parsed, error) && !parsed.ok)
      note_refused_registration(client.peer, request, std::string(parsed.field("message").value_or("refused")));
    if (request.verb == Verb::Wait && parse_answer(answer, parsed, error) && parsed.ok) {
      client.waiting_for = std::stoull(std::string(parsed.field("id").value_or("0")));
      return true;  // answered when the teardown is done
    }
    send_message(client.fd, answer);
    return true;
  }

  // The preload does not wait for the answer to its registration (a daemon that does not
  // answer must not hold up a process start), so a refusal is said here, where the operator
  // looks: the first kLoggedRefusals, then every thousandth (a hostile client cannot flood
  // the log).
  void note_refused_registration(const Peer &peer, const Request &request, const std::string &why) {
    ++refused_registrations_;
    if (refused_registrations_ > kLoggedRefusals && refused_registrations_ % 1000 != 0) return;
    std::fprintf(stderr, "leaseguard daemon: refused a registration from pid %d (uid %u) in lease %s: %s%s\n",
                 static_cast<int>(peer.pid), static_cast<unsigned>(peer.uid), request.lease.c_str(), why.c_str(),
                 refused_registrations_ > kLoggedRefusals
                     ? (" (" + std::to_string(refused_registrations_) + " refused so far)").c_str()
                     : "");
  }

  void answer_waiters() {
    for (Client &client : clients_) {
      if (client.waiting_for == 0 || !authority_.finished(client.waiting_for)) continue;
      send_message(client.fd, format_answer(Answer{true, authority_.summary(client.waiting_for)}));
      authority_.forget(client.waiting_for);
      client.waiting_for = 0;
    }
  }

  void forget_old_leases(uint64_t now) {
    std::vector<uint64_t> old;
    for (const auto &[id, lease] : authority_.leases())
      if (lease.ended() && lease.ended_ms + kEndedRetentionMs < now) old.push_back(id);
    for (uint64_t id : old) {
      const bool awaited =
          std::any_of(clients_.begin(), clients_.end(), [&](const Client &client) { return client.waiting_for == id; });
      if (!awaited) authority_.forget(id);
    }
  }

  // A scraper sends its request as it connects, and is answered at once; a connection that
  // says nothing only holds a slot. So with every slot taken, the oldest connection goes for
  // the new one: idle clients, however many, cannot keep a scrape out.
  void accept_metrics() {
    while (true) {
      const int fd = accept4(metrics_listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      // Closed in place (fd -1), not erased: serve_metrics pairs them with what was polled.
      const auto open = [](const MetricsConnection &connection) { return connection.fd >= 0; };
      if (static_cast<size_t>(std::count_if(metrics_connections_.begin(), metrics_connections_.end(), open)) >=
          kMaxMetricsConnections) {
        MetricsConnection &oldest = *std::find_if(metrics_connections_.begin(), metrics_connections_.end(), open);
        close(oldest.fd);
        oldest.fd = -1;
      }
      metrics_connections_.push_back({fd, "", boottime_ms() + kHttpDeadlineMs});
    }
  }

  void serve_metrics(const std::vector<pollfd> &watched, size_t first, uint64_t now) {
    std::vector<MetricsConnection> kept;
    const size_t polled = watched.size() - first;
    for (size_t i = 0; i < metrics_connections_.size(); ++i) {
      MetricsConnection &connection = metrics_connections_[i];
      if (connection.fd < 0) continue;  // given up for a newer one (accept_metrics)
      bool done = now >= connection.deadline_ms;
      if (!done && i < polled && (watched[first + i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buffer[2048];
        const ssize_t got = recv(connection.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (got <= 0) done = !(got < 0 && (errno == EAGAIN || errno == EINTR));
        else connection.request.append(buffer, static_cast<size_t>(got));
        if (connection.request.find("\r\n\r\n") != std::string::npos) {
          write_all_blocking(connection.fd, http_answer(connection.request, render_metrics(authority_.metrics(now))));
          done = true;
        } else if (connection.request.size() > kMaxHttpRequestBytes) {
          done = true;
        }
      }
      if (done) close(connection.fd);
      else kept.push_back(connection);
    }
    metrics_connections_ = std::move(kept);
  }

  DaemonOptions options_;
  LeaseStore store_;
  LeaseAuthority authority_;
  int listener_ = -1, metrics_listener_ = -1, signal_fd_ = -1;
  int spare_fd_ = -1;  // closed to take a connection when no descriptor is left
  bool stopping_ = false;
  std::vector<Client> clients_;
  std::vector<MetricsConnection> metrics_connections_;
  uint64_t refused_registrations_ = 0;
};

}  // namespace

std::string default_state_directory() {
  if (geteuid() == 0) return "/var/lib/leaseguard";
  if (const char *state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/')
    return std::string(state) + "/leaseguard";
  const char *home = std::getenv("HOME");
  return std::string(home != nullptr && *home == '/' ? home : "/tmp") + "/.local/state/leaseguard";
}

int run_daemon(const DaemonOptions &options) { return Server(options).run(); }

}  // namespace leaseguard::authority
