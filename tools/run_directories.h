// Each `leaseguard run` keeps its journals in a directory of its own under --out, so that
// runs into the same directory are never merged by accident:
//
//   leaseguard-out/
//     run-20261202-012603.123-4567/     one run: its journals and exit statuses
//     run-20261202-013010.004-4702/
//     latest -> run-20261202-013010.004-4702
//
// A run's name is when it started (UTC, to the millisecond) and its pid, so names sort as
// the runs started. `latest` is a relative symbolic link, replaced atomically when a run
// starts. `report DIR` of such a directory reads the run `latest` names (or, without it,
// the newest), `--all-runs` every run; `run --keep N` removes all but the newest N.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace leaseguard::cli {

// The JSON report `run` leaves beside a run's journals: every leak, symbolized while the
// run's binaries are the ones that ran, before suppressions and filters. A baseline that is
// a run (`diff`, `--baseline`) is read from it, so that rebuilding the program after the
// run does not leave the baseline's stacks unnamed (and every leak new).
inline constexpr char kRunReportName[] = "leaseguard-run.json";

// Makes the directory of a new run under `out_dir` (which exists and is checked: files.h)
// and points `latest` at it. Returns its path, or nullopt and one line in `error`.
std::optional<std::string> start_run_directory(const std::string &out_dir, std::string &error);

// The runs under `out_dir`, by name, oldest first.
std::vector<std::string> run_directory_names(const std::string &out_dir);

// The run `report` of `directory` reads by default: `latest`'s, else the newest; nullopt if
// `directory` holds no runs (journals written there directly are read as they are).
std::optional<std::string> newest_run(const std::string &directory);

// Removes every run but the newest `keep` (its journals, exit files and kRunReportName, then
// the directory), save those still going: another `run` holds their directory's lock.
// Anything else in a run's directory is left, and the directory with it. False and one line
// in `error` if a run could not be removed.
bool prune_runs(const std::string &out_dir, size_t keep, std::string &error);

}  // namespace leaseguard::cli
