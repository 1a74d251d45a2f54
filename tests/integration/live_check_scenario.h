// A running service checked from outside (tests/integration/live_check_test.cpp): shared by
// the tests that launch it under `run`, `run --check-every` and a lease of the authority.
#pragma once

#include <map>
#include <string>
#include <vector>

// Runs tests/victims/leaky_service with `launcher` (a leaseguard command line that takes run's
// options; --out and --format are added) in `dir`, checks it twice from outside with
// `leaseguard check`, and expects what the scenario's comment says. `periodic`: checks also
// come from leaseguard's own thread, so the check before the last is not the first call's.
void two_checks_of_a_running_service(const std::vector<std::string> &launcher, const std::string &dir, bool periodic,
                                     const std::map<std::string, std::string> &environment = {});
