// `leaseguard top`: leases, their processes and the device memory each holds, refreshed
// every second, from the lease authority, or, when no daemon answers, straight from the
// journals of the newest run under --out. `--once` prints one snapshot, for scripts.
#pragma once

#include <string>

namespace leaseguard::cli {

struct TopOptions {
  bool once = false;
  std::string socket;                      // --socket; empty: the default
  std::string out_dir = "leaseguard-out";  // --out: where to find journals without a daemon
};

int top_command(const TopOptions &options);

}  // namespace leaseguard::cli
