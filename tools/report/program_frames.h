// Which frames of a stack are the program's own: those above where the C library starts the
// process (the frames below `main`: __libc_start_call_main, __libc_start_main, _start) or a
// thread (the trailing frames in the C library: start_thread, clone3).
//
// Why: what the C library's frames are called, and whether they have source lines, depends
// on whether its debug symbols are installed (Debian's libc6-dbg), which differs from one
// machine to the next. A leak's identity (leak_signature: baselines, SARIF fingerprints)
// therefore leaves them out, or a baseline taken on a developer's machine would match
// nothing in CI. And their source lines are not looked up: reading the C library's line
// table means decompressing its whole debug information, ~70 ms a report, for frames no
// one reads for their lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "report_model.h"

namespace leaseguard::report {

// True for the C library and the dynamic loader (glibc's libc.so.6, libc-2.31.so,
// libpthread.so.0 before glibc 2.34, ld-linux-x86-64.so.2), by the module's file name.
bool is_c_library(const std::string &module);

// Where the trailing run of C library frames begins: the stack's size if it ends in a
// frame of its own.
size_t trailing_c_library_frames_begin(const StackView &stack);

// True for the program's `main` (symbolized): the frames below it are the C library's
// start of the process.
bool is_main(const Frame &frame);

// How many frames, from the innermost, are the program's: through the first `main`, and
// never into the trailing C library frames. Needs the frames symbolized to find `main`.
size_t program_frame_count(const StackView &stack);

}  // namespace leaseguard::report
