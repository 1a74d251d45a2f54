// `leaseguard lease start|list|end|extend`: the lease authority's clients.
#pragma once

#include "cli_options.h"

namespace leaseguard::cli {

// `lease start` exits as `run` does (2 also when no lease authority answers); the others
// 0, or 2 with one line on stderr.
int lease_command(const LeaseOptions &options);

}  // namespace leaseguard::cli
