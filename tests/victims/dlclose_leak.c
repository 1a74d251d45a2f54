/* Loads a plugin, lets it leak, unloads it with dlclose, then exits: the report, made after
 * the plugin is gone from the process, must still name the plugin's function and line. */
#include <dlfcn.h>

#include "victim.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  victim_primary_context();
  void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  int (*leak)(void) = (int (*)(void))dlsym(plugin, "leak_in_plugin");
  if (leak == NULL || leak() != 0) return 4;
  dlclose(plugin);
  printf("plugin unloaded\n");
  return 0;
}
