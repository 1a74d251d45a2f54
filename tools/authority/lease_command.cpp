#include "lease_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "authority_socket.h"
#include "run_command.h"

namespace leaseguard::cli {
namespace {

using authority::Answer;
using authority::Request;
using authority::Verb;

// How long a question other than `wait` may take: the daemon answers at once, so not
// answering within this means it is wedged or gone.
constexpr int kAnswerTimeoutMs = 30'000;

int fail(const std::string &message) {
  std::fprintf(stderr, "leaseguard: error: %s\n", message.c_str());
  return kUsageError;
}

}  // namespace

bool exchange(int fd, const Request &request, Answer &answer, int timeout_ms, std::string &error) {
  std::string text;
  if (!authority::ask(fd, authority::format_request(request), text, timeout_ms, error)) return false;
  if (!authority::parse_answer(text, answer, error)) return false;
  if (!answer.ok) {
    error = std::string(answer.field("message").value_or("the lease authority refused"));
    return false;
  }
  return true;
}

report::AuthorityLease lease_account(const Answer &summary) {
  report::AuthorityLease lease;
  auto number = [](std::string_view text) {
    uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
  };
  for (const auto &[key, value] : summary.fields) {
    if (key == "id") {
      lease.id = number(value);
    } else if (key == "name") {
      lease.name = value;
    } else if (key == "ended_by") {
      lease.ended_by = value;
    } else if (key == "teardown") {
      lease.teardown = value;
    } else if (key == "stage") {  // "NAME AT_MS"
      const size_t space = value.find(' ');
      lease.stages.push_back(
          {value.substr(0, space), space == std::string::npos ? 0 : number(value.substr(space + 1))});
    } else if (key == "verify") {  // "clean", "skipped WHY" or "held PID:DEVICE:BYTES|? ..."
      const size_t space = value.find(' ');
      lease.verify = value.substr(0, space);
      const std::string rest = space == std::string::npos ? "" : value.substr(space + 1);
      if (lease.verify == "skipped") lease.verify_detail = rest;
      std::istringstream held(lease.verify == "held" ? rest : "");
      for (std::string item; held >> item;) {
        report::AuthorityLease::Held entry;
        unsigned long long bytes = 0;
        char unknown = 0;
        if (std::sscanf(item.c_str(), "%d:%d:%llu", &entry.pid, &entry.device, &bytes) == 3) entry.bytes = bytes;
        else if (std::sscanf(item.c_str(), "%d:%d:%c", &entry.pid, &entry.device, &unknown) != 3) continue;
        lease.verify_held.push_back(entry);
      }
    } else if (key == "survived") {  // "PID"
      lease.survived.push_back(static_cast<int>(number(value)));
    } else if (key == "process") {  // "PID HELD GAVE_BACK JOURNAL", HELD "-" or "DEVICE:BYTES,..."
      std::istringstream fields(value);
      report::LeaseProcessAccount process;
      std::string held;
      if (!(fields >> process.pid >> held >> process.gave_back_bytes)) continue;
      std::getline(fields >> std::ws, process.journal);
      std::istringstream devices(held == "-" ? "" : held);
      for (std::string item; std::getline(devices, item, ',');) {
        int device = 0;
        unsigned long long bytes = 0;
        if (std::sscanf(item.c_str(), "%d:%llu", &device, &bytes) == 2) process.held.emplace_back(device, bytes);
      }
      lease.processes.push_back(std::move(process));
    }
  }
  return lease;
}

namespace {

// A granted lease while its command runs: where the daemon is, the lease's id, and the
// connection the command's end was reported on (closed when the command is over).
struct GrantedLease {
  std::string socket;
  std::string id;
  int connection = -1;
  bool reported = false;  // the command ran and its end was reported (or tried)
};

// Asks the daemon for the lease; its id, or nullopt with `error` set.
std::optional<std::string> grant_lease(const LeaseOptions &options, const std::string &socket, std::string &error) {
  const int fd = authority::connect_to(socket, error);
  if (fd < 0) return std::nullopt;
  Request request;
  request.verb = Verb::Start;
  request.name = options.name;
  request.ttl_ms = options.ttl_ms;
  request.teardown = options.teardown;
  request.grace_ms = options.grace_ms;
  Answer granted;
  const bool answered = exchange(fd, request, granted, kAnswerTimeoutMs, error);
  // No connection is held while the command runs (the daemon closes idle ones): the lease is
  // the daemon's, and the end is told on a new one.
  close(fd);
  if (!answered) {
    error = "no lease granted: " + error;
    return std::nullopt;
  }
  return std::string(granted.field("id").value_or(""));
}

// "The command ended with `status`": ends the lease (ended_by exit) if nothing ended it first.
Request exited_request(const std::string &id, int status) {
  Request exited;
  exited.verb = Verb::Exited;
  exited.lease = id;
  exited.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return exited;
}

// The command's end is the lease's: what it left running (an orphaned child, a daemon it
// started) is the teardown's to end, now, not whenever the lease's time runs out.
void tell_command_ended(const GrantedLease &lease, int status) {
  const Request exited = exited_request(lease.id, status);
  Answer answer;
  std::string problem;
  const int told = authority::connect_to(lease.socket, problem);
  if (told < 0 || !exchange(told, exited, answer, kAnswerTimeoutMs, problem))
    std::fprintf(stderr, "leaseguard: warning: the lease authority was not told that the command ended: %s\n",
                 problem.c_str());
  if (told >= 0) close(told);
}

// When every process of the command is gone: tells the daemon, waits for the teardown, and
// puts the lease's account in the report.
void report_tree_ended(GrantedLease &lease, int status, report::Report &report) {
  lease.reported = true;
  const Request exited = exited_request(lease.id, status);
  Answer answer;
  std::string problem;
  Request wait;
  wait.verb = Verb::Wait;
  wait.lease = lease.id;
  // The teardown's length is the lease's business (its grace period), so the wait has no
  // timeout.
  auto tell = [&](int on) {
    return exchange(on, exited, answer, kAnswerTimeoutMs, problem) && exchange(on, wait, answer, -1, problem);
  };
  // A daemon restarted meanwhile (it keeps the lease) is asked again, once.
  bool told = false;
  for (int attempt = 0; attempt < 2 && !told; ++attempt) {
    if (lease.connection >= 0) close(lease.connection);
    lease.connection = authority::connect_to(lease.socket, problem);
    told = lease.connection >= 0 && tell(lease.connection);
  }
  if (!told) {
    std::fprintf(stderr, "leaseguard: warning: the lease authority did not report lease %s's end: %s\n",
                 lease.id.c_str(), problem.c_str());
    return;
  }
  report.authority_lease = lease_account(answer);
}

// The command never ran (not found, not executable, a usage error): its lease ends now, not
// at its TTL.
void end_unused_lease(GrantedLease &lease) {
  Request end;
  end.verb = Verb::End;
  end.lease = lease.id;
  Answer answer;
  std::string problem;
  lease.connection = authority::connect_to(lease.socket, problem);
  if (lease.connection < 0 || !exchange(lease.connection, end, answer, kAnswerTimeoutMs, problem))
    std::fprintf(stderr, "leaseguard: warning: lease %s was not ended: %s\n", lease.id.c_str(), problem.c_str());
}

int start(const LeaseOptions &options) {
  GrantedLease lease;
  lease.socket = authority::socket_path(options.socket);
  std::string error;
  std::optional<std::string> id = grant_lease(options, lease.socket, error);
  if (!id) return fail(error);
  lease.id = *id;
  RunExtras extras;
  // Each process of the command registers with the authority once, at start (the preload).
  extras.environment["LEASEGUARD_SOCKET"] = authority::socket_path_from_anywhere(lease.socket);
  extras.environment["LEASEGUARD_AUTHORITY_LEASE"] = lease.id;
  extras.command_ended = [&](int status) { tell_command_ended(lease, status); };
  extras.tree_ended = [&](const report::ExitStatuses &, int status, report::Report &report) {
    report_tree_ended(lease, status, report);
  };
  const int status = run_command(options.run, &extras);
  if (!lease.reported) end_unused_lease(lease);
  if (lease.connection >= 0) close(lease.connection);
  return status;
}

int list(const LeaseOptions &options, int fd) {
  Request request;
  request.verb = Verb::List;
  Answer answer;
  std::string error;
  if (!exchange(fd, request, answer, kAnswerTimeoutMs, error)) return fail(error);
  if (options.json) std::printf("[");
  else
    std::printf("%-6s %-24s %-6s %-10s %-12s %-8s %s\n", "ID", "NAME", "OWNER", "TEARDOWN", "TTL LEFT", "STAGE",
                "PROCESSES");
  bool first = true;
  for (const auto &[key, value] : answer.fields) {
    if (key != "lease") continue;
    char name[authority::kMaxNameBytes + 1] = {}, teardown[16] = {}, left[24] = {}, stage[16] = {};
    unsigned long long id = 0, owner = 0, processes = 0;
    if (std::sscanf(value.c_str(), "%llu %128s %llu %15s %23s %15s %llu", &id, name, &owner, teardown, left, stage,
                    &processes) != 7)
      continue;
    if (options.json) {
      std::printf(
          "%s{\"id\":%llu,\"name\":\"%s\",\"owner\":%llu,\"teardown\":\"%s\",\"ttl_remaining_ms\":%s,"
          "\"stage\":\"%s\",\"processes\":%llu}",
          first ? "" : ",", id, name, owner, teardown, std::string(left) == "-" ? "null" : left, stage, processes);
    } else {
      const std::string ttl = std::string(left) == "-" ? "-" : std::to_string(std::stoull(left) / 1000) + "s";
      std::printf("%-6llu %-24s %-6llu %-10s %-12s %-8s %llu\n", id, name, owner, teardown, ttl.c_str(), stage,
                  processes);
    }
    first = false;
  }
  if (options.json) std::printf("]\n");
  return 0;
}

}  // namespace

int lease_command(const LeaseOptions &options) {
  if (options.verb == LeaseVerb::Start) return start(options);
  std::string error;
  const int fd = authority::connect_to(authority::socket_path(options.socket), error);
  if (fd < 0) return fail(error);
  int status = 0;
  if (options.verb == LeaseVerb::List) {
    status = list(options, fd);
  } else {
    Request request;
    request.verb = options.verb == LeaseVerb::End ? Verb::End : Verb::Extend;
    request.lease = options.target;
    request.ttl_ms = options.extend_ms;
    Answer answer;
    if (!exchange(fd, request, answer, kAnswerTimeoutMs, error)) status = fail(error);
    else if (options.verb == LeaseVerb::Extend)
      std::printf("lease %s: %s ms left\n", options.target.c_str(),
                  std::string(answer.field("ttl_remaining_ms").value_or("?")).c_str());
  }
  close(fd);
  return status;
}

}  // namespace leaseguard::cli
