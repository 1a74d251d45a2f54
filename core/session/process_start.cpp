// Starting the process's core (see process_start.h).
#include "process_start.h"

#include <pthread.h>
#include <sys/auxv.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "log.h"
#include "module_map.h"
#include "options.h"

namespace leaseguard {
namespace {

// The child's allocations are its own: it starts with a clean core and, on its first
// allocation, its own journal. The parent's records stay the parent's.
void child_after_fork() { Tracker::reinstall_after_fork(); }

}  // namespace

Tracker *start_process_core(const FrontEnd &front_end) noexcept {
  try {
    std::vector<std::string> warnings;
    Options options = parse_options([](const char *name) { return std::getenv(name); }, warnings, wall_clock_ns());
    set_log_level(options.log_level);
    if (!settings_checked_by_run(options))
      for (const std::string &warning : warnings) log_warning("%s", warning.c_str());
    if (getauxval(AT_SECURE) != 0) {
      // Its environment is the caller's, so writing files where it says could be used
      // against the program's owner. Record nothing, write nothing.
      log_debug("secure execution (setuid or setgid program): recording nothing");
      return nullptr;
    }
    if (options.disabled) {
      log_debug("LEASEGUARD_DISABLE set: pass-through");
      return nullptr;
    }
    Tracker *tracker = Tracker::install(options);
    tracker->exclude_code(ModuleMap::module_range(front_end.own_code));
    tracker->set_reclaim_backend(front_end.reclaim);
    pthread_atfork(Tracker::prepare_fork, Tracker::parent_after_fork, child_after_fork);
    return tracker;
  } catch (...) {
    log_warning("out of memory starting; recording nothing");
    return nullptr;
  }
}

}  // namespace leaseguard
