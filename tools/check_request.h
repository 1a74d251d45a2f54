// The asking side of a live check (`leaseguard check PID`): finding the process's control page
// and asking it through the page (tools/authority/protocol/control_page.h), never by a signal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace leaseguard::cli {

// A running process's control page, open, and the journal beside it.
struct ControlPageOfProcess {
  int fd = -1;  // read-write, closed by the destructor
  std::string control_path;
  std::string journal_path;
  ControlPageOfProcess() = default;
  ControlPageOfProcess(const ControlPageOfProcess &) = delete;
  ControlPageOfProcess &operator=(const ControlPageOfProcess &) = delete;
  ~ControlPageOfProcess();
};

// Finds process `pid`'s control page among its mappings (/proc/PID/maps: the process maps it
// for its life and closes its descriptor), opened through /proc/PID/root so that a process
// in a container is found too. It must be a regular file of this user's (or any, for root),
// of the page's size and version, made by `pid` itself (its pid in its own namespace, as
// /proc/PID/status says it), not one a forked child inherited. False with a one-line `error`
// where there is none: no such process, another user's, not under leaseguard, or under it
// with nothing recorded yet (the page is made when the journal opens).
bool find_control_page(pid_t pid, ControlPageOfProcess &page, std::string &error);

// Asks for one check and waits until the process has answered (its checks_done moved on),
// up to `timeout_ms`, watching that it still runs. Askers take turns (flock on the page).
// The status the process wrote (authority::kCheck*), or false with `error`.
bool ask_for_check(pid_t pid, const ControlPageOfProcess &page, uint64_t timeout_ms, int32_t &status,
                   std::string &error);

}  // namespace leaseguard::cli
