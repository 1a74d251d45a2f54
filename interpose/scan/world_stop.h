// Stopping every other thread of the process while the reachability scan reads memory, and
// reading each stopped thread's registers, stack pointer and thread pointer.
//
// Why signals, not a ptrace tracer (LeakSanitizer's method): a tracer must be another
// process allowed to trace this one (Yama's ptrace_scope, containers without
// CAP_SYS_PTRACE, a program already under a debugger or strace all refuse it), while a
// signal reaches every thread that has not blocked it, and its handler is handed exactly
// the registers the thread was interrupted with. A real-time signal that nothing in the
// process handles is sent to each thread with rt_tgsigqueueinfo and a mark of leaseguard's;
// its handler saves the interrupted registers and waits on a futex until the scan is done.
// The same signal without the mark is the program's, and takes the default action the
// program left it at (the process ends). Threads are listed from
// /proc/self/task again after each round, until no new one appeared: a thread created while
// others stop is stopped too.
//
// A thread inside a tracked heap call (heap_tracker.h) defers its stop to the call's end,
// so no block is ever between the allocator and the table while the scan reads it. A thread
// that blocks the signal is never sent it (a program waiting in sigwait for every signal
// would receive it): it is not stopped; the scan reads its stack from the stack pointer
// the kernel reports for a thread blocked in a system call, but not its registers, and says
// so (stopped_all() is false). So it does where the process has more threads than the 16,384
// it has room for: those past it are neither stopped nor read.
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
// The general registers read of each stopped thread: x86-64's gregset_t, NGREG words.
inline constexpr size_t kThreadRegisterWords = 23;

struct StoppedThread {
  pid_t tid = 0;
  bool registers_read = false;  // stopped by the signal: `registers` and `thread_pointer` are valid
  uintptr_t stack_pointer = 0;  // 0: unknown (not stopped and not blocked in a system call)
  uintptr_t thread_pointer = 0;
  uint64_t registers[kThreadRegisterWords] = {};  // the interrupted general registers
};

class WorldStop {
 public:
  // Stops every thread but the caller and the `skip` threads (leaseguard's own, which never
  // hold the program's pointers). Returns false if it could not (no free signal, no memory,
  // no descriptor to list the threads with): then nothing is stopped.
  bool stop(const pid_t *skip, size_t skip_count) noexcept;
  // Lets every stopped thread go on.
  void resume() noexcept;

  size_t count() const noexcept;
  const StoppedThread &thread(size_t i) const noexcept;
  // Whether thread i is parked: its memory stays as it is until resume(). One that is not
  // runs on (it blocked the signal), and its stack may go at any moment.
  bool parked(size_t i) const noexcept;
  // True if every thread was stopped with its registers read.
  bool stopped_all() const noexcept;
};

// The program set an action of its own for `signal_number` (signal_hooks.cpp). Where that is
// the stop signal, which the program had left unhandled when a stop chose it, the next stop
// chooses another: the program's handler must never be sent leaseguard's stops.
void program_sets_action(int signal_number) noexcept;

// Called by a thread leaving a tracked heap call whose stop was deferred (heap_tracker.cpp).
void park_after_deferred_stop() noexcept;

}  // namespace leaseguard::interpose
