/* Loads a plugin, lets it leak, unloads it with dlclose, then exits: the report, made after
 * the plugin is gone from the process, must still name the plugin's function and line.
 *
 *   dlclose_leak PLUGIN [SECOND_PLUGIN]
 *
 * With a second plugin (libleaky_plugin_b.so), loads it after the first is unloaded and lets
 * it leak too: the loader maps it at the first one's addresses, and its leak must be named
 * as its own. Prints "same addresses" when the loader did that. */
#include <dlfcn.h>

#include "victim.h"

typedef int (*leak_function)(void);

static void *load(const char *path, const char *function_name, leak_function *leak) {
  void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  *leak = (leak_function)dlsym(plugin, function_name);
  return plugin;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  victim_primary_context();
  leak_function leak = NULL;
  void *plugin = load(argv[1], "leak_in_plugin", &leak);
  if (plugin == NULL) return 3;
  if (leak == NULL || leak() != 0) return 4;
  const void *first_address = (const void *)leak;
  dlclose(plugin);
  printf("plugin unloaded\n");
  if (argc < 3) return 0;

  plugin = load(argv[2], "leak_in_second_plugin", &leak);
  if (plugin == NULL) return 3;
  if (leak == NULL || leak() != 0) return 4;
  if ((const void *)leak == first_address) printf("same addresses\n");
  dlclose(plugin);
  printf("second plugin unloaded\n");
  return 0;
}
