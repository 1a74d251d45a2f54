// Threads of the program inside leaseguard on their way to classify, and where the program's
// part of each one's stack begins.
//
// One classification runs at a time (reachability_scan.cpp). A thread that asks for another
// meanwhile (its exit, a lease it ends) is in leaseguard's frames (finding its caller's
// stack, waiting for its turn), and the running classification stops it there and reads its
// stack. Those frames were laid over dead stack, where the program's earlier calls (the
// driver's allocation paths among them) left copies of pointers in slots the frames never
// write: read as roots, they made lost memory "reachable" (15 of 20 dropped buffers, when a
// time-to-live ran out as the program exited). So such a thread says where leaseguard's
// frames end, and its stack is read from there up: from its program's first frame with the
// registers that frame has once that is known (caller_stack.h), from its caller's frame with
// the registers it was stopped with until then.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "caller_stack.h"

namespace leaseguard::interpose {

// Published from construction to withdraw() (or destruction). `caller_frame`: the stack
// pointer of the caller of leaseguard's classifying function. Where every place is taken,
// nothing is published (the thread's stack is then read whole, as any thread's).
class WaitingClassifier {
 public:
  explicit WaitingClassifier(uintptr_t caller_frame) noexcept;
  ~WaitingClassifier() { withdraw(); }
  WaitingClassifier(const WaitingClassifier &) = delete;
  WaitingClassifier &operator=(const WaitingClassifier &) = delete;

  // The program's first frame, once found (find_caller_stack).
  void refine(const CallerStack &caller) noexcept;
  void withdraw() noexcept;

 private:
  int slot_ = -1;
};

// Where to read thread `tid`'s stack from, if it published it: `found` says whether the
// registers are its program frame's (else the thread's own, as stopped, stand). Read while
// the program's threads are stopped: a copy, never torn by a thread stopped mid-write.
bool waiting_caller(pid_t tid, CallerStack &caller) noexcept;

}  // namespace leaseguard::interpose
