// A load for the lease authority (LeaseAuthorityEndToEnd's load test): LEASES holders, each a
// process that asks for a lease of its own (as `lease start` does) and forks PER_LEASE
// children that register with it as the preload does (their own pid and start time, a
// journal prefix in DIR). Then every process waits until standard input closes.
//
// Prints "ready REGISTERED" once every child has had its answer (REGISTERED: how many the
// daemon accepted), then exits 0 after standard input closes and every process ended.
// Holders are started a few at a time and each child only after the one before it was
// answered, so the daemon's bound on clients at once is never the limit.
//
// Usage: authority_load_helper SOCKET DIR LEASES PER_LEASE
// Built on the core alone, never with a sanitizer: eleven thousand sanitized processes would
// need more memory than the machine has.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "authority_protocol.h"
#include "proc_stat.h"

using namespace leaseguard;
using namespace leaseguard::authority;

namespace {

constexpr int kHoldersAtOnce = 8;

// Sends `request` on a new connection (a blocking one: it waits for room in the daemon's
// queue) and parses the answer; false if none came or it was a refusal.
bool ask_daemon(const std::string &path, const Request &request, Answer &answer) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const std::string message = format_request(request);
  std::string text(kMaxAnswerBytes, '\0'), error;
  bool answered = false;
  if (connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0 &&
      send(fd, message.data(), message.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(message.size())) {
    const ssize_t got = recv(fd, text.data(), text.size(), 0);
    answered = got > 0 && parse_answer(std::string_view(text.data(), static_cast<size_t>(got)), answer, error);
  }
  close(fd);
  return answered && answer.ok;
}

// Blocks until standard input is closed (the test is done with the load).
void wait_for_the_end() {
  char byte;
  while (read(0, &byte, 1) > 0) {
  }
}

// A child of a holder: registers with `lease`, says how that went on `said`, then waits.
[[noreturn]] void registered_child(const std::string &socket, const std::string &dir, const std::string &lease,
                                   int said) {
  Request request;
  request.verb = Verb::Register;
  request.lease = lease;
  request.journal = dir + "/load." + std::to_string(getpid());
  ProcStat self;
  request.start_time = read_proc_stat(getpid(), self) ? self.start_time : 0;
  Answer answer;
  const char outcome = ask_daemon(socket, request, answer) ? 'y' : 'n';
  (void)!write(said, &outcome, 1);
  close(said);
  wait_for_the_end();
  _exit(0);
}

// A holder: its lease, then its children one at a time; each child's outcome goes on `said`.
[[noreturn]] void holder(const std::string &socket, const std::string &dir, int index, int per_lease, int said) {
  Request start;
  start.verb = Verb::Start;
  start.name = "load-" + std::to_string(index);
  start.ttl_ms = 3600'000;
  start.teardown = Teardown::Report;
  Answer granted;
  if (!ask_daemon(socket, start, granted)) {
    for (int child = 0; child < per_lease; ++child) (void)!write(said, "n", 1);
    _exit(1);
  }
  const std::string lease(granted.field("id").value_or(""));
  for (int child = 0; child < per_lease; ++child) {
    int answered[2];
    if (pipe(answered) != 0) _exit(2);
    if (fork() == 0) {
      close(answered[0]);
      close(said);
      registered_child(socket, dir, lease, answered[1]);
    }
    close(answered[1]);
    char outcome = 'n';
    (void)!read(answered[0], &outcome, 1);
    close(answered[0]);
    (void)!write(said, &outcome, 1);
  }
  close(said);
  wait_for_the_end();
  while (wait(nullptr) > 0) {
  }
  _exit(0);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: authority_load_helper SOCKET DIR LEASES PER_LEASE\n");
    return 2;
  }
  const std::string socket = argv[1], dir = argv[2];
  const int leases = std::atoi(argv[3]), per_lease = std::atoi(argv[4]);
  signal(SIGPIPE, SIG_IGN);
  int registered = 0;
  for (int first = 0; first < leases; first += kHoldersAtOnce) {
    const int wave = std::min(kHoldersAtOnce, leases - first);
    int said[2];
    if (pipe(said) != 0) return 3;
    for (int index = first; index < first + wave; ++index)
      if (fork() == 0) {
        close(said[0]);
        holder(socket, dir, index, per_lease, said[1]);
      }
    close(said[1]);
    char outcome;
    for (int answers = 0; answers < wave * per_lease && read(said[0], &outcome, 1) == 1; ++answers)
      registered += outcome == 'y' ? 1 : 0;
    close(said[0]);
  }
  std::printf("ready %d\n", registered);
  std::fflush(stdout);
  wait_for_the_end();
  while (wait(nullptr) > 0) {
  }
  return 0;
}
