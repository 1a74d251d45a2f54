// Start-up and shutdown of the preload library: the process's core (core/session/process_start.h),
// the termination signals, and the end of recording at exit.
#include "authority_registration.h"
#include "driver_queries.h"
#include "exit_order.h"
#include "heap_tracker.h"
#include "log.h"
#include "preload_state.h"
#include "process_start.h"
#include "reachability_scan.h"
#include "real_dlsym.h"
#include "reclaim.h"
#include "signal_hooks.h"
#include "jump_hooks.h"

namespace leaseguard::interpose {

bool g_pass_through = false;

namespace {

__attribute__((constructor(101))) void preload_start() {
  leaseguard_resolve_real_dlsym();
  resolve_jump_functions();
  // Never destroyed: a lease may expire on the watchdog thread while the process exits.
  static auto *backend = new DriverReclaimBackend;
  heap::start();
  Tracker::call_when_journal_opens(arrange_classification_at_exit);
  Tracker::call_to_classify_leases(classify_lease);
  Tracker *tracker = start_process_core(FrontEnd{reinterpret_cast<uintptr_t>(&preload_start), backend});
  g_pass_through = tracker == nullptr;
  if (tracker != nullptr) install_termination_handlers();
  if (tracker != nullptr) register_with_lease_authority(tracker->options());
}

void finish_recording(void *);

__attribute__((destructor(101))) void preload_finish() {
  // Runs after the program's atexit handlers and static destructors (which may still free
  // device memory), so what is live now was really leaked.
  Tracker *tracker = recording_tracker();
  if (tracker == nullptr) return;
  // A vfork child (or a child of clone(CLONE_VM)) that calls exit() runs this in its parent's
  // memory: the core is the parent's, and the parent's process goes on. Its exit is done at
  // the parent's own (exit_order.h).
  if (!tracker->in_own_process()) {
    run_at_parents_exit(finish_recording);
    return;
  }
  if (inside_leaseguard()) {
    // Ending the leases takes the core's locks, which the interrupted frames may hold. The
    // journal then reads as a killed process's: every allocation it recorded is reported.
    log_warning(
        "exit() was called from a signal handler that interrupted leaseguard on this thread: "
        "the process's end is not recorded, and its live allocations are reported unclassified");
    return;
  }
  tracker->finish_process(loaded_drivers());
}

// The process's end, where a vfork child's exit() used up the handlers that do it.
void finish_recording(void *) {
  classify_at_process_exit();
  preload_finish();
}

}  // namespace
}  // namespace leaseguard::interpose
