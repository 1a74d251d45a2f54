// Where the program's part of the classifying thread's own stack begins.
//
// A classification that runs on a program's thread (at exit, in the atexit handler; at a
// lease's end, inside the lease call) reads that thread's stack as roots. Between
// leaseguard's frames and the program's first frame lie the frames of the call path: libc's
// exit and __run_exit_handlers, or leaseguard's own lease entry points. They were laid over
// dead stack, where the program's earlier calls left copies of pointers, and the slots they
// never write still hold those copies: read as roots, they make memory the program dropped
// "reachable". A cudart program's leaked cudaMallocHost, cudaMallocManaged and
// cudaMallocAsync buffers were all hidden so, by copies cudart's own frames had left.
//
// So the stack is read from the program's first frame up, and the registers the program
// kept there are taken from where the call path saved them: the unwinder restores each
// callee-saved register as that frame has it (the other registers do not outlive a call).
#pragma once

#include <cstdint>

namespace leaseguard::interpose {

struct CallerStack {
  bool found = false;   // false: no program frame was found above; read from the caller on
  uintptr_t begin = 0;  // the program's first frame: its stack pointer at the call
  // %rbx, %rbp, %r12-%r15 as that frame has them.
  static constexpr int kRegisters = 6;
  uint64_t registers[kRegisters] = {};
  // The thread's frames hold nothing of the program's: its stack is not read at all, its
  // thread-local storage is (reachability_scan.h, classify_live_memory's `caller_done`).
  bool stack_unread = false;
};

// Walks up from `caller_frame` (the stack pointer of the caller of leaseguard's
// classifying function) past the frames of libc and of leaseguard's preload. Takes the
// loader's lock: call it before the program's threads are stopped.
CallerStack find_caller_stack(uintptr_t caller_frame) noexcept;

}  // namespace leaseguard::interpose
