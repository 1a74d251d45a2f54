// A GpuMemHandle kept for the process's life (a cache a global points to) in a session that
// never ends: its memory is live at exit, and reachable through the handle, not a leak.
#include <leaseguard/session.hpp>

#include <vector>

struct Cache {
  std::vector<leaseguard::GpuMemHandle> handles;
};

__attribute__((used)) leaseguard::GpuSession *g_session;
__attribute__((used)) Cache *g_cache;

int main() {
  g_session = new leaseguard::GpuSession({.name = "kept"});  // deliberately never deleted
  g_cache = new Cache;
  leaseguard::GpuMemHandle handle = g_session->mem_alloc(4000);
  g_cache->handles.push_back(handle);  // a copy: the handle's memory lives while any copy does
  return 0;
}
