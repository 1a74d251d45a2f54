// Where leaseguard's own files are, found from the executable's location: the same rule
// holds in the build tree and after `cmake --install` (bin/ next to lib/), so the CLI needs
// no environment to work.
#pragma once

#include <string>

namespace leaseguard::cli {

struct InstallPaths {
  std::string preload;          // lib/libleaseguard_preload.so
  std::string sim_library_dir;  // lib/leaseguard/sim (holds libcuda.so.1)
};

// Returns false with `error` set if a file is missing.
bool find_install_paths(InstallPaths &paths, bool need_sim, std::string &error);

}  // namespace leaseguard::cli
