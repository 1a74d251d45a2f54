// The runtime part of a stack: the innermost frames that are a GPU runtime's or a vendor
// library's, not the program's. Every cudaMalloc's innermost frames are the CUDA runtime's
// (libcudart.so, or the static runtime's `libcudart_static_<hash>` functions and its public
// entry points inside the executable) and, where the typed `cudaMalloc<T>` was inlined, a
// frame in cuda_runtime.h. They stay in the stack, but a leak's site (the HTML page's
// largest sites, a group's title, SARIF and JUnit locations, generated suppressions) is the
// first frame outside them: naming the runtime there would point every leak at the same
// place, and a suppression of it would silence them all.
//
// A frame is the runtime's by its module (the CUDA driver and runtime, cuBLAS/cuBLASLt,
// cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuDNN, NCCL, the HIP runtime, rocBLAS, hipBLAS, RCCL,
// MIOpen, and leaseguard's own C++ API), by a function name only the static CUDA runtime
// uses, or by a source file among the runtimes' installed headers.
#pragma once

#include <cstddef>

#include "report_model.h"

namespace leaseguard::report {

bool is_runtime_frame(const Frame &frame);

// How many frames, from the innermost, are the runtime's: the index of the first frame of the
// program's own code. The stack's size if every frame is the runtime's.
size_t runtime_frame_count(const StackView &stack);

// The frame a leak is placed at: the first outside the runtime part, or the innermost where
// every frame is the runtime's. nullptr for an empty stack.
const Frame *site_frame(const StackView &stack);

// The frame whose source line places the leak: the site, or the first frame out from it
// that has a source file (the site may be in code built without -g); the site where none
// does. nullptr for an empty stack.
const Frame *located_site_frame(const StackView &stack);

}  // namespace leaseguard::report
