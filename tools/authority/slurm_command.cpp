#include "slurm_command.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>

#include "authority_socket.h"
#include "files.h"
#include "install_paths.h"
#include "lease_command.h"
#include "report_output.h"

namespace leaseguard::cli {
namespace {

using authority::Answer;
using authority::Request;
using authority::Verb;

constexpr int kAnswerTimeoutMs = 30'000;  // a question other than `wait` (lease_command.cpp)
// Where the task prolog's script puts the task's LD_PRELOAD, which leaseguard itself must not
// run under: its malloc and the preload's (and a sanitizer's, which must come first) would meet.
constexpr char kTaskPreloadVariable[] = "LEASEGUARD_TASK_LD_PRELOAD";

// The job as Slurm's environment says it.
struct SlurmJob {
  std::string id;        // SLURM_JOB_ID: the lease's name
  std::string dir_name;  // the id, or ID.rN after N requeues (each run its own directory)
  uid_t uid = 0;
  gid_t gid = 0;
  std::optional<uint64_t> end_time_s;  // SLURM_JOB_END_TIME, where Slurm sets it
};

std::optional<uint64_t> number_in(const char *variable) {
  const char *text = std::getenv(variable);
  uint64_t value = 0;
  if (text == nullptr || *text == '\0') return std::nullopt;
  const char *end = text + std::strlen(text);
  auto [stop, problem] = std::from_chars(text, end, value);
  if (problem != std::errc() || stop != end) return std::nullopt;
  return value;
}

// `owner`: the prolog and epilog (root) read the job's user from SLURM_JOB_UID; a task runs as it.
bool read_job(bool owner_from_environment, SlurmJob &job, std::string &error) {
  const char *id = std::getenv("SLURM_JOB_ID");
  if (id == nullptr || !number_in("SLURM_JOB_ID") || !authority::valid_lease_name(id)) {
    error = "SLURM_JOB_ID is not a job id (is this run by slurmd?)";
    return false;
  }
  job.id = id;
  const uint64_t restarts = number_in("SLURM_JOB_RESTART_COUNT").value_or(0);
  job.dir_name = restarts == 0 ? job.id : job.id + ".r" + std::to_string(restarts);
  if (!owner_from_environment) {
    job.uid = getuid();
    job.gid = getgid();
  } else {
    const std::optional<uint64_t> uid = number_in("SLURM_JOB_UID");
    if (!uid || *uid >= UINT32_MAX) {
      error = "SLURM_JOB_UID is not a user id";
      return false;
    }
    job.uid = static_cast<uid_t>(*uid);
    const std::optional<uint64_t> gid = number_in("SLURM_JOB_GID");
    passwd entry{}, *found = nullptr;
    char buffer[4096];
    if (gid && *gid < UINT32_MAX) job.gid = static_cast<gid_t>(*gid);
    else if (getpwuid_r(job.uid, &entry, buffer, sizeof buffer, &found) == 0 && found != nullptr)
      job.gid = found->pw_gid;
    else job.gid = static_cast<gid_t>(job.uid);
  }
  job.end_time_s = number_in("SLURM_JOB_END_TIME");
  return true;
}

int fail(const char *stage, const std::string &message) {
  std::fprintf(stderr, "leaseguard: slurm %s: error: %s\n", stage, message.c_str());
  return kUsageError;
}

std::string lease_file(const SlurmOptions &options, const SlurmJob &job) {
  return options.jobs_dir + "/" + job.dir_name + ".lease";
}

// The jobs' directory: made (with its parents) if missing, and root's, writable by no one
// else, never through a symbolic link: the epilog acts as root on what lies in it.
bool prepare_jobs_dir(const std::string &dir, std::string &error) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot make " + part + ": " + std::strerror(errno);
      return false;
    }
    if (slash == std::string::npos) break;
  }
  struct stat status {};
  if (lstat(dir.c_str(), &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != 0 ||
      (status.st_mode & 022) != 0) {
    error = dir + " must be a directory of root's that no one else can write (--out)";
    return false;
  }
  return true;
}

// DIR/JOBID, the user's and only theirs: its journals go there, then its report.
bool make_job_dir(const std::string &path, const SlurmJob &job, std::string &error) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "cannot make " + path + ": " + std::strerror(errno);
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat status {};
  const bool made = fd >= 0 && fstat(fd, &status) == 0 && (status.st_uid == 0 || status.st_uid == job.uid) &&
                    fchown(fd, job.uid, job.gid) == 0 && fchmod(fd, 0700) == 0;
  if (!made) error = "cannot give " + path + " to user " + std::to_string(job.uid) + ": " + std::strerror(errno);
  if (fd >= 0) close(fd);
  return made;
}

// Replaces `path` whole with `text` (root's directory: nobody else can put a link there).
bool write_file(const std::string &path, const std::string &text, std::string &error) {
  const std::string temporary = path + ".new";
  unlink(temporary.c_str());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  const bool written = fd >= 0 && write_all(fd, text) && fsync(fd) == 0;
  if (fd >= 0) close(fd);
  if (!written || rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

// One question to the daemon on a connection of its own.
bool ask(const SlurmOptions &options, const Request &request, Answer &answer, int timeout_ms, std::string &error) {
  const int fd = authority::connect_to(authority::socket_path(options.lease.socket), error);
  if (fd < 0) return false;
  const bool answered = exchange(fd, request, answer, timeout_ms, error);
  close(fd);
  return answered;
}

int prolog(const SlurmOptions &options) {
  SlurmJob job;
  std::string error;
  if (geteuid() != 0) return fail("prolog", "runs as root, as slurmd's Prolog");
  if (!read_job(true, job, error) || !prepare_jobs_dir(options.jobs_dir, error) ||
      !make_job_dir(options.jobs_dir + "/" + job.dir_name, job, error))
    return fail("prolog", error);
  Request request;
  request.verb = Verb::Start;
  request.name = job.id;
  request.owner = job.uid;
  request.teardown = options.lease.teardown;
  request.grace_ms = options.lease.grace_ms;
  if (job.end_time_s) {
    const auto now = static_cast<uint64_t>(std::time(nullptr));
    request.ttl_ms = *job.end_time_s > now ? (*job.end_time_s - now) * 1000 : 1000;
  }
  Answer granted;
  if (!ask(options, request, granted, kAnswerTimeoutMs, error)) return fail("prolog", "no lease granted: " + error);
  const std::string id(granted.field("id").value_or(""));
  if (!write_file(lease_file(options, job), id + "\n", error)) return fail("prolog", error);
  std::fprintf(stderr, "leaseguard: slurm prolog: job %s: lease %s for user %u, journals in %s/%s\n", job.id.c_str(),
               id.c_str(), static_cast<unsigned>(job.uid), options.jobs_dir.c_str(), job.dir_name.c_str());
  return 0;
}

// The lease's id the prolog wrote; empty (with `error`) if there is none.
std::string lease_id_of(const SlurmOptions &options, const SlurmJob &job, std::string &error) {
  std::string text;
  if (!read_regular_file(lease_file(options, job), text, error)) return "";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    error = lease_file(options, job) + " holds no lease id";
    return "";
  }
  return text;
}

// The "export" lines Slurm applies to the task's environment: the preload, where its
// journals go, and the lease's mark (which the teardown finds its processes by).
int task_prolog(const SlurmOptions &options) {
  SlurmJob job;
  std::string error;
  InstallPaths paths;
  std::string id;
  if (!read_job(false, job, error) || (id = lease_id_of(options, job, error)).empty() ||
      !find_install_paths(paths, options.sim, error)) {
    std::fprintf(stderr, "leaseguard: slurm task-prolog: warning: the task runs without leaseguard: %s\n",
                 error.c_str());
    return 0;
  }
  auto exported = [](const char *name, const std::string &value) {
    std::printf("export %s=%s\n", name, value.c_str());
  };
  // The task's own LD_PRELOAD (a step started from a job's batch script inherits the preload
  // with the user's own): the script runs leaseguard without it, passing it on.
  auto prepended = [](const std::string &first, const char *variable) {
    const char *task_value = std::strcmp(variable, "LD_PRELOAD") == 0 ? std::getenv(kTaskPreloadVariable) : nullptr;
    const char *rest = task_value != nullptr ? task_value : std::getenv(variable);
    if (rest == nullptr || *rest == '\0') return first;
    return std::string(rest).find(first) != std::string::npos ? std::string(rest) : first + ":" + rest;
  };
  exported("LD_PRELOAD", prepended(paths.preload, "LD_PRELOAD"));
  if (options.sim) exported("LD_LIBRARY_PATH", prepended(paths.sim_library_dir, "LD_LIBRARY_PATH"));
  exported("LEASEGUARD_OUT", options.jobs_dir + "/" + job.dir_name);
  exported("LEASEGUARD_RUN_ID", "slurm-" + job.id);
  exported("LEASEGUARD_AUTHORITY_LEASE", id);
  exported("LEASEGUARD_SOCKET", authority::socket_path_from_anywhere(authority::socket_path(options.lease.socket)));
  return 0;
}

// Writes the job's report into its directory, as the job's user (the journals are the
// user's files: root reads none of them), with the authority's account of the lease.
bool write_job_report(const std::string &dir, const SlurmJob &job, const Answer &summary, bool sim) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(job.gid) != 0 || setuid(job.uid) != 0) _exit(kUsageError);
    Inputs inputs;
    CommonOptions common;
    common.quiet = true;
    common.formats = {{"text", ""}, {"json", ""}};
    report::Report report;
    report.authority_lease = lease_account(summary);
    report.simulated = sim;
    std::string error;
    if (!collect_inputs({dir}, "", inputs, error) || !produce_report(inputs, common, dir, stdout, report, error)) {
      std::fprintf(stderr, "leaseguard: slurm epilog: warning: job %s's report: %s\n", job.id.c_str(), error.c_str());
      _exit(kUsageError);
    }
    _exit(0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int epilog(const SlurmOptions &options) {
  SlurmJob job;
  std::string error;
  if (geteuid() != 0) return fail("epilog", "runs as root, as slurmd's Epilog");
  if (!read_job(true, job, error)) return fail("epilog", error);
  const std::string id = lease_id_of(options, job, error);
  if (id.empty()) {  // no prolog of leaseguard's ran for this job: nothing of it to end
    std::fprintf(stderr, "leaseguard: slurm epilog: job %s has no lease: %s\n", job.id.c_str(), error.c_str());
    return 0;
  }
  Request end;
  end.verb = Verb::End;
  end.lease = id;
  Answer answer;
  // A refusal is no error here (the lease ended already, at its time-to-live): the teardown is
  // waited for all the same, and the wait says what is wrong if anything is.
  ask(options, end, answer, kAnswerTimeoutMs, error);
  Request wait;
  wait.verb = Verb::Wait;
  wait.lease = id;
  if (!ask(options, wait, answer, -1, error))
    return fail("epilog", "lease " + id + " of job " + job.id + ": no teardown reported: " + error);
  const std::string dir = options.jobs_dir + "/" + job.dir_name;
  const bool reported = write_job_report(dir, job, answer, options.sim);
  unlink(lease_file(options, job).c_str());
  const report::AuthorityLease lease = lease_account(answer);
  std::string remains;
  for (int pid : lease.survived) remains += " " + std::to_string(pid);
  if (!remains.empty()) remains = "; still running after SIGKILL:" + remains;
  if (lease.verify == "held") {
    remains += "; the device still holds memory of (pid:device:bytes):";
    for (const report::AuthorityLease::Held &held : lease.verify_held)
      remains += " " + std::to_string(held.pid) + ":" + std::to_string(held.device) + ":" +
                 (held.bytes ? std::to_string(*held.bytes) : "?");
  }
  std::fprintf(stderr, "leaseguard: slurm epilog: job %s: lease %s torn down (%s)%s; report in %s%s\n", job.id.c_str(),
               id.c_str(), lease.teardown.c_str(), remains.c_str(), dir.c_str(), reported ? "" : " (not written)");
  return remains.empty() ? 0 : 1;
}

}  // namespace

int slurm_command(const SlurmOptions &options) {
  switch (options.stage) {
    case SlurmStage::Prolog: return prolog(options);
    case SlurmStage::TaskProlog: return task_prolog(options);
    case SlurmStage::Epilog: return epilog(options);
  }
  return kUsageError;
}

}  // namespace leaseguard::cli
