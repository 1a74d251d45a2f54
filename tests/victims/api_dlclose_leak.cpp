// Loads a plugin that allocates through the C++ API and keeps the memory, unloads it, then
// loads a second one, which the loader maps at the first one's addresses, and lets it do the
// same. Run without the preload, the API's own core must name each leak after its own
// plugin. Prints "same addresses" when the loader reused them.
//
//   api_dlclose_leak PLUGIN SECOND_PLUGIN
#include <dlfcn.h>

#include <cstdio>

#include <leaseguard/session.hpp>

namespace {

using LeakFunction = int (*)(leaseguard::GpuSession *);

// Calls `function_name` in the plugin at `path` and unloads it; the function's address, or
// nullptr if anything failed.
const void *leak_through(const char *path, const char *function_name, leaseguard::GpuSession &session) {
  void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return nullptr;
  }
  auto leak = reinterpret_cast<LeakFunction>(dlsym(plugin, function_name));
  if (leak == nullptr || leak(&session) != 0) return nullptr;
  dlclose(plugin);
  return reinterpret_cast<const void *>(leak);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  // Report, not reclaim: the leaks stay leaks, listed with their stacks when the session ends.
  leaseguard::GpuSession session({.name = "plugins", .on_expiry = leaseguard::OnExpiry::Report});
  const void *first = leak_through(argv[1], "leak_in_api_plugin", session);
  if (first == nullptr) return 3;
  const void *second = leak_through(argv[2], "leak_in_second_api_plugin", session);
  if (second == nullptr) return 4;
  if (second == first) std::printf("same addresses\n");
  return 0;
}
