// `leaseguard lease start|list|end|extend`: the lease authority's clients.
#pragma once

#include <string>

#include "authority_protocol.h"
#include "cli_options.h"
#include "report_model.h"

namespace leaseguard::cli {

// Asks one question on `fd` (-1 `timeout_ms`: no limit); false with `error` (the daemon's own
// message for a refusal).
bool exchange(int fd, const authority::Request &request, authority::Answer &answer, int timeout_ms, std::string &error);

// What the authority reported of a lease's end (its `wait` answer), for a report, which gives
// it in every format.
report::AuthorityLease lease_account(const authority::Answer &summary);

// `lease start` exits as `run` does (2 also when no lease authority answers); the others
// 0, or 2 with one line on stderr.
int lease_command(const LeaseOptions &options);

}  // namespace leaseguard::cli
