// A running service checked from outside (tests/integration/live_check_test.cpp): shared by
// the tests that launch it under `run`, `run --check-every` and a lease of the authority, in C
// and in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

struct ServiceRun {
  // A leaseguard command line that takes run's options (--out and --format are added).
  std::vector<std::string> launcher;
  // The service: tests/victims/leaky_service.c or .py, as they speak.
  std::vector<std::string> service;
  // The function of its leaks' first frame; empty: not checked (a Python service's first
  // frame is libffi's, without a name).
  std::string site = "handle_request";
  // Checks also come from leaseguard's own thread, so the check before the last is not the
  // first call's.
  bool periodic = false;
  std::map<std::string, std::string> environment;
  // Dropped buffers that may read reachable at its exit, its workers gone: none for the C
  // service. In Python a live object of the interpreter's may hold a dropped buffer's address
  // among bytes it never wrote (its pymalloc block held another object before: seen as a
  // 64-byte str's): read conservatively, that buffer is reachable. As many as at a check.
  size_t stale_at_exit = 0;
  // Called after the second check with what it found lost, in bytes, while the service runs.
  std::function<void(uint64_t lost_bytes)> while_running;
};

// Runs the service in `dir`, checks it twice from outside with `leaseguard check`, and
// expects what the scenario's comment in live_check_test.cpp says.
void two_checks_of_a_running_service(const ServiceRun &run, const std::string &dir);

// `leaseguard top --once` with `top_options` shows `lost_bytes` (as top writes a size) in its
// last column, LOST: what the service's last check found lost; and under it the site that grew,
// the function `site`.
void expect_top_shows_lost(const std::vector<std::string> &top_options, uint64_t lost_bytes, const std::string &site);
