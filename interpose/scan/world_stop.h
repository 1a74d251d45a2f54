// Stopping every other thread of the process while the reachability scan reads memory, and
// reading each stopped thread's registers, stack pointer and thread pointer, without changing
// what any of them does.
//
// A tracer task holds them: cloned with the process's memory (CLONE_VM, not a thread of the
// process), it attaches to each thread with PTRACE_SEIZE and stops it with PTRACE_INTERRUPT,
// which sends no signal, runs no handler on the thread's stack and leaves every signal
// disposition alone. A system call the stop interrupts is restarted when the thread goes on,
// as the kernel restarts it after a stop: those the kernel would end with EINTR instead, and
// that did nothing before they ended (epoll_wait, sigtimedwait, semop, a send or receive with
// a timeout), are set back to run again before the thread resumes, unless a signal of the
// program's is pending for it (that EINTR is the program's). A thread waiting in connect is
// not stopped (ended by a stop, the call cannot be run again). A signal that arrives while a
// thread is held is delivered when it goes on.
// Threads are listed from /proc/PID/task again after each round, until no new one appeared.
//
// A thread inside a tracked heap call (heap_tracker.h) is let go on until the call's end, where
// it waits to be stopped, so no block is ever between the allocator and the table while the
// scan reads it. A thread that cannot be attached (the process is under a debugger or strace,
// a seccomp filter or Yama forbids ptrace) is not stopped: the scan reads its stack from the
// stack pointer the kernel reports for a thread blocked in a system call, but not its
// registers, and says so (stopped_all() is false). So it does where the process has more
// threads than the 16,384 it has room for: those past it are neither stopped nor read.
//
// While the world is stopped the caller must not allocate, log, or take any lock another
// thread may hold: it reads memory and writes into memory of its own (mmap'd).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace leaseguard::interpose {

// The most threads one stop has room for: those past it are neither stopped nor read.
inline constexpr size_t kMaxStoppedThreads = 16384;
// The general registers read of each stopped thread: x86-64's gregset_t, NGREG words (the
// first words of ptrace's user_regs_struct hold the same registers in another order).
inline constexpr size_t kThreadRegisterWords = 23;

struct StoppedThread {
  pid_t tid = 0;
  bool registers_read = false;  // stopped: `registers` and `thread_pointer` are valid
  uintptr_t stack_pointer = 0;  // 0: unknown (not stopped and not blocked in a system call)
  uintptr_t thread_pointer = 0;
  uint64_t registers[kThreadRegisterWords] = {};  // the general registers it was stopped with
};

// Why threads were left running, for the report's one line.
enum class NotStoppedReason { kNone, kTooMany, kAttachRefused, kStuckInCall, kInConnect };

class WorldStop {
 public:
  // Stops every thread but the caller and the `skip` threads (leaseguard's own, which never
  // hold the program's pointers). Returns false if it could not (no memory, no descriptor to
  // list the threads with, no task to trace them): then nothing is stopped.
  bool stop(const pid_t *skip, size_t skip_count) noexcept;
  // Lets every stopped thread go on.
  void resume() noexcept;

  size_t count() const noexcept;
  const StoppedThread &thread(size_t i) const noexcept;
  // Whether thread i is held: its memory stays as it is until resume(). One that is not runs
  // on, and its stack may go at any moment.
  bool parked(size_t i) const noexcept;
  // True if every thread was stopped with its registers read.
  bool stopped_all() const noexcept;
  NotStoppedReason reason() const noexcept;
};

// Called by a thread leaving a tracked heap call during which a stop found it
// (heap_tracker.cpp): it waits there, to be stopped, until the world goes on.
void park_after_deferred_stop() noexcept;

}  // namespace leaseguard::interpose
