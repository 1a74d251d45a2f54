#include "device_globals.h"

#include <map>
#include <mutex>

namespace leaseguard::interpose {
namespace {

// Never destroyed: a lease may be classified on leaseguard's watchdog while the process exits.
struct Known {
  std::mutex mutex;
  std::map<uint64_t, DeviceGlobal> by_address;  // the runtime asks for a variable again and again
};

Known &known() {
  static auto *instance = new Known;
  return *instance;
}

}  // namespace

void note_device_global(Api located_by, uint64_t owner, uint64_t address, uint64_t bytes) noexcept {
  if (address == 0 || bytes == 0) return;
  Known &globals = known();
  std::lock_guard lock(globals.mutex);
  try {
    globals.by_address[address] = DeviceGlobal{located_by, owner, address, bytes};
  } catch (...) {
    // No memory: the variable is not read, as one the host never asked for.
  }
}

void forget_device_globals_of(uint64_t owner) noexcept {
  Known &globals = known();
  std::lock_guard lock(globals.mutex);
  for (auto at = globals.by_address.begin(); at != globals.by_address.end();)
    at = at->second.owner == owner ? globals.by_address.erase(at) : std::next(at);
}

std::vector<DeviceGlobal> device_globals() {
  Known &globals = known();
  std::lock_guard lock(globals.mutex);
  std::vector<DeviceGlobal> copy;
  copy.reserve(globals.by_address.size());
  for (const auto &[address, global] : globals.by_address) copy.push_back(global);
  return copy;
}

}  // namespace leaseguard::interpose
