// The exit classification ahead of every static destructor, those registered after it too,
// and of the exiting thread's thread_local destructors.
//
// The classification runs in an exit handler, and glibc runs exit handlers in the reverse
// order of their registration: one registered when the journal opens (the first
// allocation) runs after the destructors of every static constructed later. A cache or
// singleton that a function makes on first use (`static std::vector<void *> blocks;`) is
// constructed later, and its destructor, run first, would free the container that holds the
// program's device pointers: the memory it kept on purpose would read lost.
//
// So __cxa_atexit (through which atexit and every static destructor are registered) is
// interposed: once the handler is armed, each registration that follows is followed by the
// handler's own, which thus stays the last registered and runs first. It runs once (the
// handler guards itself); each later registration costs one more entry in libc's list, up
// to a bound (exit_order.cpp).
//
// The exiting thread's thread_local objects are destroyed before every exit handler (glibc's
// exit calls their destructors first), and in the reverse order of their registration too:
// __cxa_thread_atexit_impl is interposed the same way, each registration on a thread followed
// by one of the handler's own. A thread's destructors also run when the thread ends, so that
// one runs the handler only where the thread is in exit() (libc's exit is among its callers).
#pragma once

namespace leaseguard::interpose {

// Registers `handler` to run at exit, and again after every later registration (its argument
// is always nullptr).
void run_first_at_exit(void (*handler)(void *)) noexcept;

// A vfork child (or a child of clone(CLONE_VM)) that calls exit() instead of _exit() runs the
// parent's exit handlers and destructors in the parent's memory, and glibc marks each as done:
// the parent's own exit then finds leaseguard's gone. Called there, in the child's exit, this
// arranges that `work` runs at the parent's exit instead: from the exiting thread's
// thread_local destructors, which run first in exit() and which the child has passed already.
// A later such child passes them too: it hands the arrangement on the same way.
void run_at_parents_exit(void (*work)(void *)) noexcept;

}  // namespace leaseguard::interpose
