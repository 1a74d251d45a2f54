// The runtime part of a stack (see runtime_frames.h).
#include "runtime_frames.h"

#include <cctype>
#include <string_view>

namespace leaseguard::report {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// Shared objects by the start of their file name: each library's SONAME and its versions.
constexpr std::string_view kRuntimeLibraries[] = {
    "libcuda.so",   "libcudart.so",    "libcublas.so",         "libcublasLt.so", "libcufft.so",   "libcufftw.so",
    "libcurand.so", "libcusparse.so",  "libcusolver.so",       "libcudnn.so",    "libcudnn_",     "libnccl.so",
    "libnvrtc.so",  "libnvJitLink.so", "libamdhip64.so",       "librocblas.so",  "libhipblas.so", "librccl.so",
    "libMIOpen.so", "libhiprtc.so",    "libleaseguard_api.so",
};

// Directories of the runtimes' installed headers (the toolkit's targets/<arch>/include, a
// distribution's /usr/include/cuda or /usr/include/hip, ROCm's): inlined code from them,
// such as cuda_runtime.h's typed cudaMalloc<T>, is the runtime's.
constexpr std::string_view kRuntimeHeaderDirectories[] = {
    "/targets/x86_64-linux/include/",
    "/targets/sbsa-linux/include/",
    "/targets/aarch64-linux/include/",
    "/cuda/include/",
    "/include/cuda/",
    "/include/hip/",
    "/include/leaseguard/",
};

bool in_runtime_library(std::string_view module) {
  const std::string_view name = module.substr(module.rfind('/') + 1);
  for (std::string_view library : kRuntimeLibraries)
    if (starts_with(name, library)) return true;
  return false;
}

// The static CUDA runtime, linked into the executable, has no debug information: its
// internal functions are named `libcudart_static_<40 hex digits>`, and its entry points are
// the API's C names (`cudaMalloc`, `cudaMallocAsync`, `__cudaRegisterFatBinary`). A C
// function of the program named like an entry point and built without -g is the one frame
// this takes for the runtime's.
bool in_static_runtime(const Frame &frame) {
  if (!frame.function || frame.file) return false;
  const std::string_view name = *frame.function;
  if (starts_with(name, "libcudart_static_") || starts_with(name, "__cudart")) return true;
  const bool entry_point =
      (starts_with(name, "cuda") && name.size() > 4 && std::isupper(static_cast<unsigned char>(name[4]))) ||
      starts_with(name, "__cuda");
  return entry_point && name.find_first_of("(<: ") == std::string_view::npos;
}

bool in_runtime_header(const Frame &frame) {
  if (!frame.file) return false;
  const std::string_view file = *frame.file;
  for (std::string_view directory : kRuntimeHeaderDirectories)
    if (file.find(directory) != std::string_view::npos) return true;
  return false;
}

}  // namespace

bool is_runtime_frame(const Frame &frame) {
  return (!frame.module.empty() && in_runtime_library(frame.module)) || in_static_runtime(frame) ||
         in_runtime_header(frame);
}

size_t runtime_frame_count(const StackView &stack) {
  size_t count = 0;
  while (count < stack.size() && is_runtime_frame(stack[count])) ++count;
  return count;
}

const Frame *site_frame(const StackView &stack) {
  if (stack.empty()) return nullptr;
  const size_t runtime = runtime_frame_count(stack);
  return &stack[runtime < stack.size() ? runtime : 0];
}

const Frame *located_site_frame(const StackView &stack) {
  if (stack.empty()) return nullptr;
  const size_t runtime = runtime_frame_count(stack);
  const size_t site = runtime < stack.size() ? runtime : 0;
  for (size_t i = site; i < stack.size(); ++i)
    if (stack[i].file) return &stack[i];
  return &stack[site];
}

}  // namespace leaseguard::report
