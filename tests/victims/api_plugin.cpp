// A plugin that allocates through the C++ API and keeps the memory (its handle is never
// dropped). Built twice: as libapi_plugin.so, and with LEAK_FUNCTION=leak_in_second_api_plugin
// as libapi_plugin_b.so, the same code under another name, which the loader maps where the
// first one was once that is unloaded (api_dlclose_leak.cpp).
#include <leaseguard/session.hpp>

#ifndef LEAK_FUNCTION
#define LEAK_FUNCTION leak_in_api_plugin
#endif

extern "C" __attribute__((noinline, visibility("default"))) int LEAK_FUNCTION(leaseguard::GpuSession *session) {
  auto *kept = new leaseguard::GpuMemHandle(session->mem_alloc(4321));  // deliberately never deleted
  return kept->freed() ? 1 : 0;
}
