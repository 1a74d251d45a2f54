// Which sanitizer runtime a program loads, so that `leaseguard run` can put it first.
//
// A program built with -fsanitize=address against the shared ASan runtime (gcc's default,
// clang's -shared-libasan) refuses to start unless that runtime is the first object loaded
// ("ASan runtime does not come first in initial library list"), and LD_PRELOAD puts
// leaseguard's preload before it. The runtime's own name (its DT_NEEDED entry, searched
// for by the loader as the program's dependency is) goes first in LD_PRELOAD instead: the
// loader maps it once, first. LeakSanitizer's and ThreadSanitizer's runtimes go first too:
// they do not refuse to start, but their interceptors are meant to come first.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace leaseguard::cli {

// The DT_NEEDED names of the ELF program at `path`; empty if it is not a dynamically linked
// ELF file (a script, a static program) or cannot be read.
std::vector<std::string> needed_libraries(const std::string &path);

// The sanitizer runtime among `needed` that must be loaded before leaseguard's preload.
std::optional<std::string> sanitizer_runtime(const std::vector<std::string> &needed);

}  // namespace leaseguard::cli
