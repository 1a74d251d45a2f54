// The world stop of world_stop.h: a real-time signal, a futex to wait on, and /proc read
// with plain system calls (no allocation, no stdio: other threads may hold their locks).
#include "world_stop.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "heap_tracker.h"

namespace leaseguard::interpose {
namespace {

// kWaiting: listed and not yet sent the signal, which it blocks only for a moment (see
// stop_signal_block); it is sent once it unblocks, or taken as gone once it exits.
enum SlotState : int { kSignalled = 0, kStopped = 1, kNotStopped = 2, kGone = 3, kWaiting = 4 };

struct Slot {
  std::atomic<int> state{kSignalled};
  StoppedThread info;
};

static_assert(kThreadRegisterWords == NGREG, "a stopped thread's registers are its ucontext's gregset_t");
static_assert(sizeof(StoppedThread::registers) == sizeof(gregset_t));
Slot *g_slots = nullptr;
// The threads the last stop parked. Resumed, each still leaves the handler, whose mask blocks
// every signal, when the next stop may begin: that mask is not the program's.
pid_t *g_last_parked = nullptr;
size_t g_last_parked_count = 0;
std::atomic<size_t> g_count{0};
std::atomic<bool> g_table_full{false};  // a thread found past kMaxStoppedThreads: never stopped nor read
std::atomic<uint32_t> g_resume_epoch{0};
std::atomic<uint32_t> g_stop_events{0};
std::atomic<bool> g_active{false};
std::atomic<int> g_signal{0};  // 0 until a stop first needs one; see program_sets_action
pid_t g_pid = 0;

pid_t current_tid() noexcept { return static_cast<pid_t>(syscall(SYS_gettid)); }

void futex_wait(std::atomic<uint32_t> &word, uint32_t expected, const timespec *timeout) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, expected, timeout, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t> &word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

uintptr_t thread_pointer() noexcept {
  uintptr_t pointer;
  asm volatile("mov %%fs:0, %0" : "=r"(pointer));
  return pointer;
}

Slot *own_slot() noexcept {
  const pid_t tid = current_tid();
  const size_t count = g_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i)
    if (g_slots[i].info.tid == tid) return &g_slots[i];
  return nullptr;
}

void park(Slot &slot, const ucontext_t &context) noexcept {
  const uint32_t epoch = g_resume_epoch.load(std::memory_order_acquire);
  static_assert(sizeof slot.info.registers == sizeof context.uc_mcontext.gregs);
  std::memcpy(slot.info.registers, context.uc_mcontext.gregs, sizeof slot.info.registers);
  slot.info.stack_pointer = static_cast<uintptr_t>(context.uc_mcontext.gregs[REG_RSP]);
  slot.info.thread_pointer = thread_pointer();
  slot.info.registers_read = true;
  // Resumed already (stop() gave up after signalling this thread): nothing will bump the
  // epoch again. resume() clears g_active before it bumps the epoch, so a thread that read
  // the new epoch above sees g_active false here.
  if (!g_active.load(std::memory_order_acquire)) return;
  int expected = kSignalled;
  // The scan may have given up on this thread already: then it must not wait.
  if (!slot.state.compare_exchange_strong(expected, kStopped, std::memory_order_acq_rel)) return;
  g_stop_events.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(g_stop_events);
  while (g_resume_epoch.load(std::memory_order_acquire) == epoch) futex_wait(g_resume_epoch, epoch, nullptr);
}

// What marks a signal as a stop of leaseguard's: sent with rt_tgsigqueueinfo, SI_QUEUE and
// this value, so that the same signal from anyone else (the program raising it, another
// process's kill) is told apart, as is a stop of ours still pending after its scan.
constexpr int kStopMark = 0x4c475354;  // "LGST"

bool is_our_stop(const siginfo_t *info) noexcept {
  return info->si_code == SI_QUEUE && info->si_pid == g_pid && info->si_value.sival_int == kStopMark;
}

// The signal is not a stop: someone else sent it, and the program had left it at its default
// action when a stop chose it (install_handler). That action is taken, as without leaseguard
// (the process ends): the default is put back, and the signal sent again to this thread, where
// it waits until the handler returns. Putting back the default gives the signal up (signal_hooks
// .cpp tells program_sets_action): the next stop takes another.
void take_default_action(int signal_number) noexcept {
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal_number, &fallback, nullptr);
  syscall(SYS_tgkill, getpid(), current_tid(), signal_number);
}

void on_stop_signal(int signal_number, siginfo_t *info, void *context) {
  if (!is_our_stop(info)) {
    take_default_action(signal_number);
    return;
  }
  if (!g_active.load(std::memory_order_acquire)) return;  // pending when its scan ended
  if (heap::in_tracked_call()) {
    heap::defer_stop(signal_number);
    return;
  }
  const int saved_errno = errno;
  if (Slot *slot = own_slot(); slot != nullptr && slot->state.load(std::memory_order_acquire) == kSignalled)
    park(*slot, *static_cast<const ucontext_t *>(context));
  errno = saved_errno;
}

// Whether the handler of `signal_number` is still this file's: the program may have put one of
// its own there without the interposed sigaction or signal (sigset, bsd_signal, a raw
// rt_sigaction system call).
bool handler_still_ours(int signal_number) noexcept {
  struct sigaction current {};
  return sigaction(signal_number, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
         current.sa_sigaction == on_stop_signal;
}

// A real-time signal with no handler, chosen once and then kept while its handler is still
// ours: it stays installed, so a stop signal still pending for a thread when the scan ended
// is ignored. One the program took meanwhile is given up, and another chosen.
bool install_handler() noexcept {
  if (const int chosen = g_signal.load(std::memory_order_acquire); chosen != 0) {
    if (handler_still_ours(chosen)) return true;
    program_sets_action(chosen);
  }
  for (int candidate = SIGRTMAX; candidate >= SIGRTMIN + 2; --candidate) {
    struct sigaction current {};
    if (sigaction(candidate, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_sigaction = on_stop_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&ours.sa_mask);
    if (sigaction(candidate, &ours, nullptr) != 0) continue;
    g_signal.store(candidate, std::memory_order_release);
    return true;
  }
  return false;
}

// Reads a small /proc file into `buffer` (NUL-terminated); false if it could not.
bool read_proc(const char *path, char *buffer, size_t size) noexcept {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  size_t used = 0;
  for (ssize_t got; used + 1 < size && (got = read(fd, buffer + used, size - 1 - used)) > 0;) used += got;
  close(fd);
  buffer[used] = '\0';
  return used > 0;
}

void task_path(char *out, pid_t tid, const char *leaf) noexcept {
  char digits[16];
  int n = 0;
  for (unsigned value = static_cast<unsigned>(tid); value != 0 || n == 0; value /= 10) digits[n++] = '0' + value % 10;
  char *at = out;
  for (const char *p = "/proc/self/task/"; *p != '\0'; ++p) *at++ = *p;
  while (n > 0) *at++ = digits[--n];
  *at++ = '/';
  for (const char *p = leaf; *p != '\0'; ++p) *at++ = *p;
  *at = '\0';
}

enum class SignalBlock { kNone, kExiting, kForAMoment, kByProgram };

bool parked_last_time(pid_t tid) noexcept {
  for (size_t i = 0; i < g_last_parked_count; ++i)
    if (g_last_parked[i] == tid) return true;
  return false;
}

// Whether `tid` blocks the stop signal (SigBlk in its status), and why. glibc blocks signals
// for a moment around work a signal must not interrupt, and blocks SIGCANCEL (32) then too,
// which a program cannot block through glibc (its sigprocmask and sigfillset leave it out):
// with SIGSETXID (33) unblocked, the thread is past its start routine's return and on its way
// to the exit system call, and nothing on its stack is live any more; with SIGSETXID blocked
// too, a thread is being made (pthread_create, and the new thread until it starts). A thread
// the last stop parked may still be leaving its handler. Unreadable: exiting if the thread has
// ended, else taken as the program's.
bool task_exited(pid_t tid) noexcept;

SignalBlock stop_signal_block(pid_t tid) noexcept {
  char path[64], status[4096];
  task_path(path, tid, "status");
  // A thread that ended since it was listed has no status left to read.
  auto unread = [tid] { return task_exited(tid) ? SignalBlock::kExiting : SignalBlock::kByProgram; };
  if (!read_proc(path, status, sizeof status)) return unread();
  const char *line = std::strstr(status, "SigBlk:");
  if (line == nullptr) return unread();
  const unsigned long long mask = std::strtoull(line + 7, nullptr, 16);
  if ((mask >> (g_signal.load(std::memory_order_relaxed) - 1) & 1) == 0) return SignalBlock::kNone;
  constexpr unsigned long long kCancelSignal = 1ull << (32 - 1), kSetxidSignal = 1ull << (33 - 1);
  if ((mask & kCancelSignal) != 0)
    return (mask & kSetxidSignal) != 0 ? SignalBlock::kForAMoment : SignalBlock::kExiting;
  if (parked_last_time(tid)) return SignalBlock::kForAMoment;
  return SignalBlock::kByProgram;
}

// Sends the stop signal to the thread of `slot`, or marks it gone if it has ended.
void send_stop(Slot &slot) noexcept {
  slot.state.store(kSignalled, std::memory_order_release);
  const int signal_number = g_signal.load(std::memory_order_relaxed);
  siginfo_t info{};
  info.si_signo = signal_number;
  info.si_code = SI_QUEUE;
  info.si_pid = g_pid;
  info.si_uid = getuid();
  info.si_value.sival_int = kStopMark;
  if (syscall(SYS_rt_tgsigqueueinfo, g_pid, slot.info.tid, signal_number, &info) != 0)
    slot.state.store(kGone, std::memory_order_release);
}

// The stack pointer of a thread blocked in a system call (/proc/.../syscall: "nr args... sp
// pc"), or 0.
uintptr_t blocked_stack_pointer(pid_t tid) noexcept {
  char path[64], text[256];
  task_path(path, tid, "syscall");
  if (!read_proc(path, text, sizeof text) || text[0] < '0' || text[0] > '9') return 0;
  const char *fields[9] = {};
  int count = 0;
  for (char *at = text; *at != '\0' && count < 9;) {
    while (*at == ' ') ++at;
    if (*at == '\0' || *at == '\n') break;
    fields[count++] = at;
    while (*at != ' ' && *at != '\0' && *at != '\n') ++at;
  }
  return count == 9 ? static_cast<uintptr_t>(std::strtoull(fields[7], nullptr, 16)) : 0;
}

// Whether `tid` has exited: gone from /proc, or a zombie. A main thread that called
// pthread_exit stays listed as a zombie until the last thread exits; it never runs a handler
// again, and what its stack held is dead.
bool task_exited(pid_t tid) noexcept {
  char path[64], stat[512];
  task_path(path, tid, "stat");
  if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK) != 0) return true;
  if (!read_proc(path, stat, sizeof stat)) return false;  // no descriptor left: taken as alive
  const char *name_end = std::strrchr(stat, ')');         // the name may hold spaces and parentheses
  if (name_end == nullptr || name_end[1] != ' ') return false;
  const char state = name_end[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

bool known(pid_t tid) noexcept {
  const size_t count = g_count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < count; ++i)
    if (g_slots[i].info.tid == tid) return true;
  return false;
}

// Adds and signals every thread of /proc/self/task not yet known; returns how many, or -1
// if the list could not be read (no descriptor left: the program may have used them all).
long signal_new_threads(pid_t self, const pid_t *skip, size_t skip_count) noexcept {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd < 0) return -1;
  alignas(8) char entries[8192];
  long added = 0;
  for (long got; (got = syscall(SYS_getdents64, fd, entries, sizeof entries)) > 0;) {
    for (long at = 0; at < got;) {
      const auto *name = entries + at + 19;  // linux_dirent64: ino 8, off 8, reclen 2, type 1, name
      uint16_t record_length;
      std::memcpy(&record_length, entries + at + 16, sizeof record_length);
      at += record_length;
      if (*name < '0' || *name > '9') continue;
      const auto tid = static_cast<pid_t>(std::strtol(name, nullptr, 10));
      bool skipped = tid == self || known(tid);
      for (size_t i = 0; i < skip_count && !skipped; ++i) skipped = skip[i] == tid;
      if (skipped) continue;
      if (g_count.load(std::memory_order_relaxed) >= kMaxStoppedThreads) {
        g_table_full.store(true, std::memory_order_relaxed);
        continue;
      }
      Slot &slot = g_slots[g_count.load(std::memory_order_relaxed)];
      slot.info = StoppedThread{};
      slot.info.tid = tid;
      slot.state.store(kSignalled, std::memory_order_relaxed);
      g_count.fetch_add(1, std::memory_order_release);
      ++added;
      if (task_exited(tid)) {
        slot.state.store(kGone, std::memory_order_release);
        continue;
      }
      switch (stop_signal_block(tid)) {
        case SignalBlock::kNone: send_stop(slot); break;
        case SignalBlock::kExiting: slot.state.store(kGone, std::memory_order_release); break;
        case SignalBlock::kForAMoment: slot.state.store(kWaiting, std::memory_order_release); break;
        case SignalBlock::kByProgram:
          slot.info.stack_pointer = blocked_stack_pointer(tid);
          slot.state.store(kNotStopped, std::memory_order_release);
          break;
      }
    }
  }
  close(fd);
  return added;
}

// Waits until no thread is still on its way to stopping. A thread that has not stopped
// after a few seconds (it blocked the signal after it was sent) is taken as not stopped; so
// is one that blocked it "for a moment" for as long.
void wait_for_stops() noexcept {
  timespec started{};
  clock_gettime(CLOCK_MONOTONIC, &started);
  for (;;) {
    const uint32_t seen = g_stop_events.load(std::memory_order_acquire);
    size_t signalled = 0, waiting = 0;
    const size_t count = g_count.load(std::memory_order_acquire);
    for (size_t i = 0; i < count; ++i) {
      const int state = g_slots[i].state.load(std::memory_order_acquire);
      signalled += state == kSignalled;
      waiting += state == kWaiting;
    }
    if (signalled + waiting == 0) return;
    // A thread that blocks the signal for a moment does so for microseconds: look again soon.
    const timespec slice{0, waiting != 0 ? 1'000'000 : 20'000'000};
    futex_wait(g_stop_events, seen, &slice);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const bool given_up = now.tv_sec - started.tv_sec >= 5;
    for (size_t i = 0; i < count; ++i) {
      Slot &slot = g_slots[i];
      int expected = slot.state.load(std::memory_order_acquire);
      if (expected != kSignalled && expected != kWaiting) continue;
      if (task_exited(slot.info.tid)) {
        slot.state.compare_exchange_strong(expected, kGone);
        continue;
      }
      if (expected == kWaiting) {
        const SignalBlock block = stop_signal_block(slot.info.tid);
        if (block == SignalBlock::kNone) {
          send_stop(slot);
          continue;
        }
        if (block == SignalBlock::kExiting) {
          slot.state.compare_exchange_strong(expected, kGone);
          continue;
        }
        if (block == SignalBlock::kForAMoment && !given_up) continue;
      } else if (!given_up) {
        continue;
      }
      if (slot.state.compare_exchange_strong(expected, kNotStopped))
        slot.info.stack_pointer = blocked_stack_pointer(slot.info.tid);
    }
  }
}

}  // namespace

bool WorldStop::stop(const pid_t *skip, size_t skip_count) noexcept {
  if (g_slots == nullptr) {
    void *memory = mmap(nullptr, kMaxStoppedThreads * (sizeof(Slot) + sizeof(pid_t)), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return false;
    g_slots = static_cast<Slot *>(memory);
    g_last_parked = reinterpret_cast<pid_t *>(g_slots + kMaxStoppedThreads);
  }
  if (!install_handler()) return false;
  g_pid = getpid();
  g_last_parked_count = 0;
  for (size_t i = 0, count = g_count.load(std::memory_order_acquire); i < count; ++i)
    if (g_slots[i].state.load(std::memory_order_acquire) == kStopped)
      g_last_parked[g_last_parked_count++] = g_slots[i].info.tid;
  g_count.store(0, std::memory_order_release);
  g_table_full.store(false, std::memory_order_relaxed);
  g_active.store(true, std::memory_order_release);
  const pid_t self = current_tid();
  for (long added; (added = signal_new_threads(self, skip, skip_count)) != 0;) {
    if (added < 0) {
      // Threads not listed cannot be stopped or read: let those stopped so far go.
      resume();
      return false;
    }
    wait_for_stops();
  }
  return true;
}

void WorldStop::resume() noexcept {
  g_active.store(false, std::memory_order_release);
  g_resume_epoch.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(g_resume_epoch);
}

size_t WorldStop::count() const noexcept { return g_count.load(std::memory_order_acquire); }
const StoppedThread &WorldStop::thread(size_t i) const noexcept { return g_slots[i].info; }
bool WorldStop::parked(size_t i) const noexcept { return g_slots[i].state.load(std::memory_order_acquire) == kStopped; }

bool WorldStop::stopped_all() const noexcept {
  if (g_table_full.load(std::memory_order_relaxed)) return false;
  const size_t count = g_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i)
    if (g_slots[i].state.load(std::memory_order_acquire) == kNotStopped) return false;
  return true;
}

void program_sets_action(int signal_number) noexcept {
  int ours = signal_number;
  g_signal.compare_exchange_strong(ours, 0, std::memory_order_acq_rel);
}

void park_after_deferred_stop() noexcept {
  if (!g_active.load(std::memory_order_acquire)) return;
  Slot *slot = own_slot();
  if (slot == nullptr || slot->state.load(std::memory_order_acquire) != kSignalled) return;
  ucontext_t context{};  // getcontext leaves some registers unset: never stale stack bytes
  getcontext(&context);
  park(*slot, context);
}

}  // namespace leaseguard::interpose
