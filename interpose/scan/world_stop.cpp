// The world stop of world_stop.h: a tracer task in the process's memory, ptrace, and /proc read
// with raw system calls. The tracer shares the caller's thread pointer (it was not given a TLS
// of its own), so it calls nothing that touches errno or any other thread-local: only the
// system calls below and this file's own code.
#include "world_stop.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "heap_tracker.h"

namespace leaseguard::interpose {
namespace {

// A system call that sets no errno: the result, or -errno.
long raw_syscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0, long a6 = 0) noexcept {
  long result;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  register long r9 asm("r9") = a6;
  asm volatile("syscall"
               : "=a"(result)
               : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return result;
}

long trace(long request, pid_t tid, long address = 0, long data = 0) noexcept {
  return raw_syscall(SYS_ptrace, request, tid, address, data);
}

// kHeld: stopped by the tracer, registers read. kInCall: let go on to its tracked call's end.
// kRunning: not stopped (attaching was refused, or it could not leave its call).
enum SlotState : int { kHeld = 1, kRunning = 2, kGone = 3, kInCall = 4 };

struct Slot {
  int state = kGone;
  bool attached = false;        // to be detached at resume
  std::atomic<int> waiting{0};  // 1 once it waits at its call's end (park_after_deferred_stop)
  StoppedThread info;
};

// What the caller and the tracer share.
enum Phase : uint32_t { kStarting, kGo, kAllHeld, kFailed, kResume, kDone };

struct Control {
  std::atomic<uint32_t> phase{kStarting};
  std::atomic<uint32_t> waiting_events{0};  // bumped by a thread that waits at its call's end
  std::atomic<uint32_t> resume_epoch{0};    // those threads wait until it changes
  std::atomic<bool> active{false};
  pid_t pid = 0, caller = 0;
  const pid_t *skip = nullptr;
  size_t skip_count = 0;
  heap::CallWords call_words{};
  std::atomic<size_t> count{0};
  bool table_full = false;
  NotStoppedReason reason = NotStoppedReason::kNone;
};

constexpr size_t kTracerStackBytes = 256 * 1024;
Control g_control;
Slot *g_slots = nullptr;
char *g_tracer_stack = nullptr;
pid_t g_tracer = 0;

void futex_wait(std::atomic<uint32_t> &word, uint32_t expected, long timeout_ns) noexcept {
  timespec timeout{0, timeout_ns};
  raw_syscall(SYS_futex, reinterpret_cast<long>(&word), FUTEX_WAIT, expected,
              timeout_ns > 0 ? reinterpret_cast<long>(&timeout) : 0);
}
void futex_wake_all(std::atomic<uint32_t> &word) noexcept {
  raw_syscall(SYS_futex, reinterpret_cast<long>(&word), FUTEX_WAKE, INT_MAX);
}
void set_phase(Phase phase) noexcept {
  g_control.phase.store(phase, std::memory_order_release);
  futex_wake_all(g_control.phase);
}
Phase wait_phase_other_than(uint32_t current) noexcept {
  uint32_t phase;
  while ((phase = g_control.phase.load(std::memory_order_acquire)) == current) futex_wait(g_control.phase, phase, 0);
  return static_cast<Phase>(phase);
}

uint64_t monotonic_ms() noexcept {
  timespec now{};
  raw_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<long>(&now));
  return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1000000;
}

// ---- /proc, read with raw calls ----

char *append_text(char *at, const char *text) noexcept {
  while (*text != '\0') *at++ = *text++;
  return at;
}
char *append_number(char *at, unsigned long value) noexcept {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + value % 10);
  while ((value /= 10) != 0);
  while (n > 0) *at++ = digits[--n];
  return at;
}
// "/proc/PID/task/TID/LEAF", or "/proc/PID/LEAF" for tid 0.
void proc_path(char *out, pid_t tid, const char *leaf) noexcept {
  char *at = append_number(append_text(out, "/proc/"), static_cast<unsigned long>(g_control.pid));
  if (tid != 0) at = append_number(append_text(at, "/task/"), static_cast<unsigned long>(tid));
  *append_text(append_text(at, "/"), leaf) = '\0';
}

bool read_proc(const char *path, char *buffer, size_t size) noexcept {
  const long fd = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t used = 0;
  for (long got; used + 1 < size && (got = raw_syscall(SYS_read, fd, reinterpret_cast<long>(buffer + used),
                                                       static_cast<long>(size - 1 - used))) > 0;)
    used += static_cast<size_t>(got);
  raw_syscall(SYS_close, fd);
  buffer[used] = '\0';
  return used > 0;
}

unsigned long long parse_unsigned(const char *text, int base) noexcept {
  unsigned long long value = 0;
  for (;; ++text) {
    const char c = *text;
    const int digit = c >= '0' && c <= '9' ? c - '0' : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return value;
    value = value * static_cast<unsigned>(base) + static_cast<unsigned>(digit);
  }
}

// The stack pointer of a thread blocked in a system call (/proc/.../syscall: "nr args... sp
// pc"), or 0.
uintptr_t blocked_stack_pointer(pid_t tid) noexcept {
  char path[64], text[256];
  proc_path(path, tid, "syscall");
  if (!read_proc(path, text, sizeof text) || text[0] < '0' || text[0] > '9') return 0;
  const char *at = text;
  for (int field = 0; field < 7; ++field) {
    while (*at != ' ' && *at != '\0') ++at;
    while (*at == ' ') ++at;
    if (*at == '\0') return 0;
  }
  return static_cast<uintptr_t>(parse_unsigned(at + (at[0] == '0' && at[1] == 'x' ? 2 : 0), 16));
}

// The hexadecimal mask after `field` ("SigPnd:") in a status text; 0 if absent.
unsigned long long status_mask(const char *status, const char *field) noexcept {
  const char *line = std::strstr(status, field);
  if (line == nullptr) return 0;
  line += std::strlen(field);
  while (*line == '\t' || *line == ' ') ++line;
  return parse_unsigned(line, 16);
}

// Whether a signal of the program's waits for `tid` (its own or the process's, not blocked):
// then an EINTR it got is the program's too.
bool program_signal_pending(pid_t tid) noexcept {
  char path[64], status[4096];
  proc_path(path, tid, "status");
  if (!read_proc(path, status, sizeof status)) return true;  // unknown: leave the EINTR as it is
  return ((status_mask(status, "SigPnd:") | status_mask(status, "ShdPnd:")) & ~status_mask(status, "SigBlk:")) != 0;
}

// Whether `tid` has exited: gone from /proc, or a zombie. A main thread that called
// pthread_exit stays listed as a zombie until the last thread exits; ptrace refuses it, and
// what its stack held is dead.
bool task_exited(pid_t tid) noexcept {
  char path[64], stat[512];
  proc_path(path, tid, "stat");
  if (raw_syscall(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(path), F_OK) != 0) return true;
  if (!read_proc(path, stat, sizeof stat)) return false;  // no descriptor left: taken as alive
  const char *name_end = std::strrchr(stat, ')');         // the name may hold spaces and parentheses
  if (name_end == nullptr || name_end[1] != ' ') return false;
  const char state = name_end[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

// ---- holding one thread ----

// Handles one wait status of a traced thread: a signal of the program's on its way to it
// stops it first (signal-delivery-stop), and is delivered at once, as without the tracer.
// Returns 1 for a stop that holds it (PTRACE_EVENT_STOP: our interrupt, or a group stop), 0 to
// wait on, -1 if it exited.
int take_status(pid_t tid, int status) noexcept {
  if (WIFEXITED(status) || WIFSIGNALED(status)) return -1;
  if (!WIFSTOPPED(status)) return 0;
  if ((status >> 16) == PTRACE_EVENT_STOP) return 1;
  trace(PTRACE_CONT, tid, 0, WSTOPSIG(status));
  return 0;
}

// Waits for the thread of `slot` to be held; false if it exited instead.
bool wait_for_stop(const Slot &slot) noexcept {
  for (;;) {
    int status = 0;
    const long got = raw_syscall(SYS_wait4, slot.info.tid, reinterpret_cast<long>(&status), __WALL, 0);
    if (got == -EINTR) continue;
    if (got < 0) return false;
    if (const int taken = take_status(slot.info.tid, status); taken != 0) return taken > 0;
  }
}

// A thread let go on to its call's end may meet a signal of the program's on the way: it is
// delivered (take_status). Returns false if the thread exited.
bool let_signals_through(const Slot &slot) noexcept {
  for (;;) {
    int status = 0;
    const long got = raw_syscall(SYS_wait4, slot.info.tid, reinterpret_cast<long>(&status), __WALL | WNOHANG, 0);
    if (got == -EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    if (take_status(slot.info.tid, status) < 0) return false;
  }
}

// The calls a stop ends with EINTR (the kernel restarts the others itself) that did nothing
// before they ended, so that running them again is as if they had never been interrupted.
// Not connect: one interrupted goes on connecting, and run again says EALREADY (a thread
// waiting in connect is not stopped at all: waits_in_connect).
bool restartable(long call) noexcept {
  switch (call) {
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_epoll_pwait2:
    case SYS_rt_sigtimedwait:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_accept:
    case SYS_accept4:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_recvmmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_sendmmsg:
    case SYS_io_getevents:
    case SYS_io_pgetevents: return true;
    default: return false;
  }
}

// A system call our stop ended with EINTR runs again when the thread goes on, as one ended
// with ERESTARTSYS would: the number back in rax, rip back on the 2-byte syscall instruction.
void restart_interrupted_call(const Slot &slot, user_regs_struct &registers) noexcept {
  if (static_cast<long>(registers.orig_rax) < 0 || !restartable(static_cast<long>(registers.orig_rax))) return;
  if (static_cast<long>(registers.rax) != -EINTR || program_signal_pending(slot.info.tid)) return;
  registers.rax = registers.orig_rax;
  registers.rip -= 2;
  trace(PTRACE_SETREGS, slot.info.tid, 0, reinterpret_cast<long>(&registers));
}

void read_registers(Slot &slot) noexcept {
  user_regs_struct registers{};
  if (trace(PTRACE_GETREGS, slot.info.tid, 0, reinterpret_cast<long>(&registers)) != 0) return;
  restart_interrupted_call(slot, registers);
  static_assert(sizeof(user_regs_struct) >= sizeof slot.info.registers);
  std::memcpy(slot.info.registers, &registers, sizeof slot.info.registers);
  slot.info.stack_pointer = registers.rsp;
  slot.info.thread_pointer = registers.fs_base;
  slot.info.registers_read = true;
}

int *call_word(const Slot &slot, intptr_t offset) noexcept {
  return reinterpret_cast<int *>(slot.info.thread_pointer + static_cast<uintptr_t>(offset));
}

// Whether `tid` waits in connect now (/proc/.../syscall's first field): a stop would end the
// call with EINTR where it has a timeout, and it cannot be run again (restartable).
bool waits_in_connect(pid_t tid) noexcept {
  char path[64], text[64];
  proc_path(path, tid, "syscall");
  if (!read_proc(path, text, sizeof text) || text[0] < '0' || text[0] > '9') return false;
  return parse_unsigned(text, 10) == SYS_connect;
}

// Attaches to the thread of `slot` and stops it. One inside a tracked call is let go on to
// the call's end (kInCall); one waiting in connect is left running.
void hold(Slot &slot) noexcept {
  if (waits_in_connect(slot.info.tid)) {
    slot.state = kRunning;
    slot.info.stack_pointer = blocked_stack_pointer(slot.info.tid);
    g_control.reason = NotStoppedReason::kInConnect;
    return;
  }
  const long attached = trace(PTRACE_SEIZE, slot.info.tid, 0, 0);
  if (attached != 0) {
    if (attached == -ESRCH || task_exited(slot.info.tid)) return;
    slot.state = kRunning;
    slot.info.stack_pointer = blocked_stack_pointer(slot.info.tid);
    g_control.reason = NotStoppedReason::kAttachRefused;
    return;
  }
  slot.attached = true;
  trace(PTRACE_INTERRUPT, slot.info.tid);
  if (!wait_for_stop(slot)) {
    slot.attached = false;
    return;
  }
  read_registers(slot);
  slot.state = kHeld;
  if (!slot.info.registers_read || *call_word(slot, g_control.call_words.depth_offset) == 0) return;
  *call_word(slot, g_control.call_words.stop_waiting_offset) = 1;
  slot.state = kInCall;
  trace(PTRACE_CONT, slot.info.tid);
}

// ---- the tracer ----

bool known(pid_t tid) noexcept {
  const size_t count = g_control.count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < count; ++i)
    if (g_slots[i].info.tid == tid) return true;
  return false;
}

bool skipped(pid_t tid) noexcept {
  if (tid == g_control.caller || known(tid)) return true;
  for (size_t i = 0; i < g_control.skip_count; ++i)
    if (g_control.skip[i] == tid) return true;
  return false;
}

// Holds every thread of /proc/PID/task not yet known; returns how many it found, or -1 if the
// list could not be read (no descriptor left: the program may have used them all).
long hold_new_threads() noexcept {
  char path[64];
  proc_path(path, 0, "task");
  const long fd = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  alignas(8) char entries[8192];
  long added = 0;
  for (long got; (got = raw_syscall(SYS_getdents64, fd, reinterpret_cast<long>(entries), sizeof entries)) > 0;) {
    for (long at = 0; at < got;) {
      const char *name = entries + at + 19;  // linux_dirent64: ino 8, off 8, reclen 2, type 1, name
      uint16_t record_length;
      std::memcpy(&record_length, entries + at + 16, sizeof record_length);
      at += record_length;
      if (*name < '0' || *name > '9') continue;
      const auto tid = static_cast<pid_t>(parse_unsigned(name, 10));
      if (skipped(tid)) continue;
      const size_t count = g_control.count.load(std::memory_order_relaxed);
      if (count >= kMaxStoppedThreads) {
        g_control.table_full = true;
        g_control.reason = NotStoppedReason::kTooMany;
        continue;
      }
      Slot &slot = g_slots[count];
      slot.state = kGone;
      slot.attached = false;
      slot.waiting.store(0, std::memory_order_relaxed);
      slot.info = StoppedThread{};
      slot.info.tid = tid;
      g_control.count.store(count + 1, std::memory_order_release);
      ++added;
      hold(slot);
    }
  }
  raw_syscall(SYS_close, fd);
  return added;
}

// Stops again each thread let go on to its call's end, once it waits there. One still in its
// call after five seconds (blocked in it) is stopped where it is and counted as not stopped:
// the heap table may be half changed.
void hold_threads_in_calls() noexcept {
  const uint64_t started = monotonic_ms();
  for (;;) {
    const uint32_t seen = g_control.waiting_events.load(std::memory_order_acquire);
    const bool given_up = monotonic_ms() - started >= 5000;
    size_t in_call = 0;
    const size_t count = g_control.count.load(std::memory_order_acquire);
    for (size_t i = 0; i < count; ++i) {
      Slot &slot = g_slots[i];
      if (slot.state != kInCall) continue;
      if (!let_signals_through(slot)) {
        slot.state = kGone;
        slot.attached = false;
        continue;
      }
      if (slot.waiting.load(std::memory_order_acquire) == 0 && !given_up) {
        ++in_call;
        continue;
      }
      trace(PTRACE_INTERRUPT, slot.info.tid);
      if (!wait_for_stop(slot)) {
        slot.state = kGone;
        slot.attached = false;
        continue;
      }
      slot.info.registers_read = false;
      read_registers(slot);
      slot.state = slot.waiting.load(std::memory_order_acquire) != 0 ? kHeld : kRunning;
      if (slot.state == kRunning) g_control.reason = NotStoppedReason::kStuckInCall;
    }
    if (in_call == 0) return;
    futex_wait(g_control.waiting_events, seen, 5'000'000);
  }
}

void release_all() noexcept {
  const size_t count = g_control.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    Slot &slot = g_slots[i];
    if (!slot.attached) continue;
    trace(PTRACE_DETACH, slot.info.tid);
    slot.attached = false;
  }
}

int tracer_main(void *) {
  // Dies with the process: a program that crashes (or is killed) while its threads are held
  // must not leave the tracer waiting for a resume that never comes (and `run`, which waits
  // for every process of the tree, waiting on it).
  raw_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (raw_syscall(SYS_getppid) != g_control.pid) return 0;
  if (wait_phase_other_than(kStarting) != kGo) return 0;
  bool listed = true;
  for (long added; listed && (added = hold_new_threads()) != 0;) {
    listed = added > 0;
    hold_threads_in_calls();
  }
  // Threads not listed cannot be held or read: the caller lets those held so far go at once.
  const Phase outcome = listed ? kAllHeld : kFailed;
  set_phase(outcome);
  wait_phase_other_than(outcome);
  release_all();
  set_phase(kDone);
  return 0;
}

// Yama's restricted mode (ptrace_scope 1) lets a process trace only its descendants, unless
// the traced process names the tracer.
bool yama_restricts() noexcept {
  char text[8];
  return read_proc("/proc/sys/kernel/yama/ptrace_scope", text, sizeof text) && text[0] == '1';
}

bool prepare_memory() noexcept {
  if (g_slots != nullptr) return true;
  void *slots = mmap(nullptr, kMaxStoppedThreads * sizeof(Slot), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *stack = mmap(nullptr, kTracerStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED || stack == MAP_FAILED) {
    if (slots != MAP_FAILED) munmap(slots, kMaxStoppedThreads * sizeof(Slot));
    if (stack != MAP_FAILED) munmap(stack, kTracerStackBytes);
    return false;
  }
  g_slots = static_cast<Slot *>(slots);
  g_tracer_stack = static_cast<char *>(stack);
  return true;
}

// Waits until the tracer leaves `current`. A tracer that ended without a word (killed: the
// kernel lets every thread it held go) counts as done, or as failed where it was to hold them.
Phase tracer_phase_other_than(uint32_t current) noexcept {
  for (;;) {
    const uint32_t phase = g_control.phase.load(std::memory_order_acquire);
    if (phase != current) return static_cast<Phase>(phase);
    futex_wait(g_control.phase, phase, 100'000'000);
    int status = 0;
    if (raw_syscall(SYS_wait4, g_tracer, reinterpret_cast<long>(&status), __WALL | WNOHANG, 0) == g_tracer) {
      g_tracer = 0;
      return current == kGo ? kFailed : kDone;
    }
  }
}

}  // namespace

bool WorldStop::stop(const pid_t *skip, size_t skip_count) noexcept {
  if (!prepare_memory()) return false;
  g_control.phase.store(kStarting, std::memory_order_relaxed);
  g_control.pid = static_cast<pid_t>(raw_syscall(SYS_getpid));
  g_control.caller = static_cast<pid_t>(raw_syscall(SYS_gettid));
  g_control.skip = skip;
  g_control.skip_count = skip_count;
  g_control.call_words = heap::call_words();
  g_control.count.store(0, std::memory_order_relaxed);
  g_control.table_full = false;
  g_control.reason = NotStoppedReason::kNone;
  g_control.active.store(true, std::memory_order_release);
  // Not a thread of the process, so that it may trace them; no exit signal, so that the
  // program's SIGCHLD and wait() never see it.
  // It starts with every signal blocked: a signal to the process group (a Ctrl-C) must not
  // run the program's handler on the tracer, in the program's memory.
  const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED;
  sigset_t all, previous;
  sigfillset(&all);
  raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all), reinterpret_cast<long>(&previous),
              sizeof(long));
  g_tracer = clone(tracer_main, g_tracer_stack + kTracerStackBytes, flags, nullptr);
  raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&previous), 0, sizeof(long));
  if (g_tracer <= 0) {
    g_control.active.store(false, std::memory_order_release);
    return false;
  }
  const bool named = yama_restricts() && prctl(PR_SET_PTRACER, g_tracer, 0, 0, 0) == 0;
  set_phase(kGo);
  const Phase reached = tracer_phase_other_than(kGo);
  if (named) prctl(PR_SET_PTRACER, 0, 0, 0, 0);
  if (reached == kFailed) {
    resume();
    return false;
  }
  return true;
}

void WorldStop::resume() noexcept {
  g_control.active.store(false, std::memory_order_release);
  g_control.resume_epoch.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(g_control.resume_epoch);
  if (g_tracer <= 0) return;
  if (const uint32_t phase = g_control.phase.load(std::memory_order_acquire); phase == kAllHeld || phase == kFailed)
    set_phase(kResume);
  while (tracer_phase_other_than(kResume) != kDone) {
  }
  if (g_tracer > 0) {
    int status = 0;
    while (raw_syscall(SYS_wait4, g_tracer, reinterpret_cast<long>(&status), __WALL, 0) == -EINTR) {
    }
  }
  g_tracer = 0;
}

size_t WorldStop::count() const noexcept { return g_control.count.load(std::memory_order_acquire); }
const StoppedThread &WorldStop::thread(size_t i) const noexcept { return g_slots[i].info; }
bool WorldStop::parked(size_t i) const noexcept { return g_slots[i].state == kHeld; }

bool WorldStop::stopped_all() const noexcept {
  if (g_control.table_full) return false;
  const size_t count = g_control.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i)
    if (g_slots[i].state == kRunning) return false;
  return true;
}

NotStoppedReason WorldStop::reason() const noexcept { return g_control.reason; }

void park_after_deferred_stop() noexcept {
  if (!g_control.active.load(std::memory_order_acquire)) return;
  const pid_t tid = static_cast<pid_t>(raw_syscall(SYS_gettid));
  const uint32_t epoch = g_control.resume_epoch.load(std::memory_order_acquire);
  const size_t count = g_control.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (g_slots[i].info.tid != tid) continue;
    g_slots[i].waiting.store(1, std::memory_order_release);
    g_control.waiting_events.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(g_control.waiting_events);
    while (g_control.active.load(std::memory_order_acquire) &&
           g_control.resume_epoch.load(std::memory_order_acquire) == epoch)
      futex_wait(g_control.resume_epoch, epoch, 0);
    return;
  }
}

}  // namespace leaseguard::interpose
