// `leaseguard check PID`: asks a running process under leaseguard for a live check, then
// reports what it found, in every format `report` writes (docs/usage.md).
#pragma once

#include "cli_options.h"

namespace leaseguard::cli {

// 0; the --fail-on-leak code where the check found memory lost; 2 for its own errors.
int check_command(const CheckOptions &options);

}  // namespace leaseguard::cli
