// Locating the preload library and the simulated driver next to the executable.
#include "install_paths.h"

#include <unistd.h>

namespace leaseguard::cli {

bool find_install_paths(InstallPaths &paths, bool need_sim, std::string &error) {
  char buffer[4096];
  ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (length <= 0) {
    error = "cannot find leaseguard's own executable (/proc/self/exe)";
    return false;
  }
  std::string executable(buffer, static_cast<size_t>(length));
  std::string bin_dir = executable.substr(0, executable.rfind('/'));
  std::string prefix = bin_dir.substr(0, bin_dir.rfind('/'));
  paths.preload = prefix + "/lib/libleaseguard_preload.so";
  paths.sim_library_dir = prefix + "/lib/leaseguard/sim";
  if (access(paths.preload.c_str(), R_OK) != 0) {
    error = "the preload library is missing: " + paths.preload;
    return false;
  }
  if (need_sim && access((paths.sim_library_dir + "/libcuda.so.1").c_str(), R_OK) != 0) {
    error = "the simulated driver is missing: " + paths.sim_library_dir + "/libcuda.so.1";
    return false;
  }
  return true;
}

}  // namespace leaseguard::cli
