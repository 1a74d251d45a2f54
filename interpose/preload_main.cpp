// Start-up and shutdown of the preload library: options, the tracker, fork and exit.
#include <pthread.h>
#include <sys/auxv.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "log.h"
#include "module_map.h"
#include "options.h"
#include "preload_state.h"
#include "real_dlsym.h"
#include "reclaim.h"
#include "signal_hooks.h"

namespace leaseguard::interpose {

bool g_pass_through = false;

namespace {

void child_after_fork() {
  // The child's allocations are its own: it starts with a clean core and, on its first
  // allocation, its own journal. The parent's records stay the parent's.
  Tracker::reinstall_after_fork();
}

__attribute__((constructor(101))) void preload_start() {
  leaseguard_resolve_real_dlsym();
  std::vector<std::string> warnings;
  Options options = parse_options([](const char *name) { return std::getenv(name); }, warnings, wall_clock_ns());
  set_log_level(options.log_level);
  if (!settings_checked_by_run(options))
    for (const std::string &warning : warnings) log_warning("%s", warning.c_str());

  if (getauxval(AT_SECURE) != 0) {
    // A setuid or setgid program: its environment is the caller's, so writing files where it
    // says could be used against the program's owner. Record nothing, write nothing.
    g_pass_through = true;
    log_debug("secure execution (setuid or setgid program): recording nothing");
    return;
  }
  if (options.disabled) {
    g_pass_through = true;
    log_debug("LEASEGUARD_DISABLE set: pass-through");
    return;
  }
  Tracker *tracker = Tracker::install(options);
  tracker->exclude_code(ModuleMap::module_range(reinterpret_cast<uintptr_t>(&preload_start)));
  // Never destroyed: a lease may expire on the watchdog thread while the process exits.
  tracker->set_reclaim_backend(new DriverReclaimBackend);
  install_termination_handlers();
  pthread_atfork(nullptr, nullptr, child_after_fork);
}

__attribute__((destructor(101))) void preload_finish() {
  // Runs after the program's atexit handlers and static destructors (which may still free
  // device memory), so what is live now was really leaked.
  if (Tracker *tracker = recording_tracker()) tracker->finish_process();
}

}  // namespace
}  // namespace leaseguard::interpose
