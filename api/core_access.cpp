// Finding or starting the process's core for the C++ API (see core_access.h).
#include "core_access.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/auxv.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "api_reclaim.h"
#include "core_link_events.h"
#include "log.h"
#include "module_map.h"
#include "options.h"
#include "tracker.h"

namespace leaseguard::api {
namespace {

// --- No recording -------------------------------------------------------------------------------

void *plain_function(void *driver_handle, const char *name) {
  return driver_handle != nullptr && name != nullptr ? dlsym(driver_handle, name) : nullptr;
}
uint64_t no_lease(const char *, uint64_t, int) { return 0; }
int no_end(uint64_t) { return -1; }
int no_state(uint64_t) { return static_cast<int>(LeaseState::Unknown); }
void no_alloc(const leaseguard_alloc_event *) {}
void no_alloc_from(const leaseguard_alloc_event *, uint64_t, uint64_t, uint64_t) {}
int no_free(uint16_t, uint64_t) { return static_cast<int>(FreeOutcome::Unknown); }
void no_exclude(uint64_t, uint64_t) {}

const leaseguard_core_link kSilent = {1, sizeof(leaseguard_core_link), plain_function, no_lease, no_end,
                                      no_state, no_alloc, no_free, no_exclude, no_free, no_alloc_from};

// --- The API library's own core, when no preload is loaded ---------------------------------------

Tracker *local() { return Tracker::instance(); }

uint64_t local_lease_begin(const char *name, uint64_t ttl_ms, int policy) {
  if (policy < 0 || policy >= static_cast<int>(Policy::Count)) policy = static_cast<int>(Policy::Report);
  return local()->lease_begin(name, ttl_ms, static_cast<Policy>(policy));
}
int local_lease_end(uint64_t lease) { return local()->lease_end(lease); }
int local_lease_state(uint64_t lease) { return static_cast<int>(local()->lease_state(lease)); }
void local_alloc(const leaseguard_alloc_event *event) { local()->on_alloc(allocation_event_of(*event)); }
void local_alloc_from(const leaseguard_alloc_event *event, uint64_t caller_pc, uint64_t caller_sp, uint64_t caller_bp) {
  local()->on_alloc(allocation_event_of(*event, caller_pc, caller_sp, caller_bp));
}
int local_free(uint16_t api, uint64_t value) { return static_cast<int>(local()->on_free(static_cast<Api>(api), value)); }
void local_exclude(uint64_t begin, uint64_t end) { local()->exclude_code(CodeRange{begin, end}); }
int local_owner_drop(uint16_t api, uint64_t value) {
  return static_cast<int>(local()->on_free(static_cast<Api>(api), value, true));
}

const leaseguard_core_link kLocal = {1, sizeof(leaseguard_core_link), plain_function, local_lease_begin,
                                     local_lease_end, local_lease_state, local_alloc, local_free, local_exclude,
                                     local_owner_drop, local_alloc_from};

void finish_local() {
  if (Tracker *tracker = local()) tracker->finish_process();
}

void child_after_fork() { Tracker::reinstall_after_fork(); }

const leaseguard_core_link *start_local() {
  std::vector<std::string> warnings;
  Options options = parse_options([](const char *name) { return std::getenv(name); }, warnings, wall_clock_ns());
  set_log_level(options.log_level);
  if (!settings_checked_by_run(options))
    for (const std::string &warning : warnings) log_warning("%s", warning.c_str());
  if (options.disabled || getauxval(AT_SECURE) != 0) return &kSilent;
  Tracker *tracker = Tracker::install(options);
  tracker->set_reclaim_backend(new ApiReclaimBackend);  // never destroyed: leases end at exit
  pthread_atfork(nullptr, nullptr, child_after_fork);
  std::atexit(finish_local);
  return &kLocal;
}

const leaseguard_core_link *g_core = nullptr;
bool g_local = false;

void find_core() {
  // The preload, if this process runs under it, exports its core.
  auto preload = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  if (preload != nullptr) {
    const leaseguard_core_link *link = preload();
    g_core = link != nullptr && link->version >= 1 && link->size >= LEASEGUARD_CORE_LINK_FIRST_SIZE ? link : &kSilent;
  } else {
    g_core = start_local();
    g_local = g_core == &kLocal;
  }
  // Stacks start at the program's call into the API, not inside it.
  CodeRange self = ModuleMap::module_range(reinterpret_cast<uintptr_t>(&find_core));
  g_core->exclude_code(self.begin, self.end);
}

}  // namespace

const leaseguard_core_link &core() noexcept {
  static std::once_flag once;
  try {
    std::call_once(once, find_core);
  } catch (...) {
    return kSilent;
  }
  return g_core != nullptr ? *g_core : kSilent;
}

void record_alloc(const leaseguard_alloc_event &event, const WalkStart &caller) noexcept {
  const leaseguard_core_link &link = core();
  if (leaseguard_core_link_has(link, on_alloc_from)) link.on_alloc_from(&event, caller.pc, caller.sp, caller.bp);
  else link.on_alloc(&event);  // a provider from before on_alloc_from: walked from here
}

bool core_is_local() noexcept {
  core();
  return g_local;
}

}  // namespace leaseguard::api
