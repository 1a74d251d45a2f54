// `leaseguard run`: runs a command under the preload, follows its whole process tree, and
// reports what leaked.
#pragma once

#include "cli_options.h"

namespace leaseguard::cli {

int run_command(const RunOptions &options);

}  // namespace leaseguard::cli
