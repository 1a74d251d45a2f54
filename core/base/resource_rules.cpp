// The drivers' allocation rules (see resource_rules.h).
#include "resource_rules.h"

namespace leaseguard {

const char *describe(Api alloc_api, Kind kind) noexcept {
  const EntryPoint *row = entry_point(alloc_api);
  if (row != nullptr && !row->what.empty()) return row->what.data();  // literals: NUL-terminated
  switch (kind) {
    case Kind::Device: return "device memory";
    case Kind::Pitched: return "pitched device memory";
    case Kind::Managed: return "managed memory";
    case Kind::Async: return "stream-ordered memory";
    case Kind::Host: return "pinned host memory";
    case Kind::Vmm: return "VMM handle reference";
    case Kind::Array: return "array";
    case Kind::Pool: return "memory pool";
    case Kind::Ipc: return "IPC mapping";
    case Kind::Registered: return "host memory registration";
    case Kind::External: return "imported external memory";
    default: return "allocation";
  }
}

}  // namespace leaseguard
