// A running service checked from outside (tests/integration/live_check_test.cpp): shared by
// the tests that launch it under `run`, `run --check-every` and a lease of the authority.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

// Runs tests/victims/leaky_service with `launcher` (a leaseguard command line that takes run's
// options; --out and --format are added) in `dir`, checks it twice from outside with
// `leaseguard check`, and expects what the scenario's comment says. `periodic`: checks also
// come from leaseguard's own thread, so the check before the last is not the first call's.
// `while_running` is called after the second check with what it found lost, in bytes, while the
// service still runs.
void two_checks_of_a_running_service(const std::vector<std::string> &launcher, const std::string &dir, bool periodic,
                                     const std::map<std::string, std::string> &environment = {},
                                     const std::function<void(uint64_t lost_bytes)> &while_running = {});

// `leaseguard top --once` with `top_options` shows `lost_bytes` (as top writes a size) in its
// last column, LOST: what the service's last check found lost.
void expect_top_shows_lost(const std::vector<std::string> &top_options, uint64_t lost_bytes);
