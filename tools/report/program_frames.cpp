// Which frames of a stack are the program's own (see program_frames.h).
#include "program_frames.h"

namespace leaseguard::report {

bool is_c_library(const std::string &module) {
  const std::string name = module.substr(module.rfind('/') + 1);
  auto starts_with = [&](const char *prefix) { return name.rfind(prefix, 0) == 0; };
  return starts_with("libc.so") || starts_with("libc-") || starts_with("libpthread.so") || starts_with("libpthread-") ||
         starts_with("ld-linux");
}

size_t trailing_c_library_frames_begin(const StackView &stack) {
  size_t begin = stack.size();
  while (begin > 0 && is_c_library(stack[begin - 1].module)) --begin;
  return begin;
}

bool is_main(const Frame &frame) { return frame.function && *frame.function == "main"; }

size_t program_frame_count(const StackView &stack) {
  const size_t end = trailing_c_library_frames_begin(stack);
  for (size_t i = 0; i < end; ++i)
    if (is_main(stack[i])) return i + 1;
  return end;
}

}  // namespace leaseguard::report
