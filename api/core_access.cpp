// Finding or starting the process's core for the C++ API (see core_access.h).
#include "core_access.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "api_reclaim.h"
#include "c_abi.h"
#include "log.h"
#include "module_map.h"
#include "process_start.h"
#include "tracker.h"

namespace leaseguard::api {
namespace {

void *plain_function(void *driver_handle, const char *name) {
  return driver_handle != nullptr && name != nullptr ? dlsym(driver_handle, name) : nullptr;
}

// This library's own core, behind the same adapter as the preload's (core/session/core_link.h): it
// records nothing until start_local() has installed it, and nothing where recording is off.
const leaseguard_core_link &own_core() {
  static const leaseguard_core_link link = core_link(plain_function);
  return link;
}

void finish_local() {
  if (Tracker *tracker = Tracker::instance()) tracker->finish_process();
}

// Starts this library's own core, as the preload starts its (core/session/process_start.h); true if
// it records.
bool start_local() {
  if (start_process_core(FrontEnd{reinterpret_cast<uintptr_t>(&start_local), new ApiReclaimBackend}) == nullptr)
    return false;
  std::atexit(finish_local);
  return true;
}

const leaseguard_core_link *g_core = nullptr;
bool g_local = false;

void find_core() {
  // The preload, if this process runs under it, exports its core.
  auto preload = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  if (preload != nullptr) {
    const leaseguard_core_link *link = preload();
    const bool usable = link != nullptr && link->version >= 1 && link->size >= LEASEGUARD_CORE_LINK_FIRST_SIZE;
    g_core = usable ? link : &own_core();  // the preload's records nothing: nor does ours
  } else {
    g_local = start_local();
    g_core = &own_core();
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
    return own_core();
  }
  return g_core != nullptr ? *g_core : own_core();
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

// The API library's C ABI (core/session/c_abi.cpp) records through the core it found.
const leaseguard_core_link &leaseguard::front_end_link() noexcept { return api::core(); }
