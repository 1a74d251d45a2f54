/* Reaches the HIP runtime the way Blender and hip-python do: dlopen("libamdhip64.so.5") and
 * dlsym on that handle, never linking it. Leaks one 5000-byte allocation through the
 * looked-up hipMalloc and frees another through the looked-up hipFree. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*set_device_fn)(int);
typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

static void *lookup(void *handle, const char *name) {
  void *function = dlsym(handle, name);
  if (function == NULL) {
    fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
    exit(3);
  }
  return function;
}

static __attribute__((noinline, noclone)) void leak_through_hip_dlsym(malloc_fn allocate, free_fn release) {
  void *kept, *freed;
  if (allocate(&freed, 4096) != 0 || release(freed) != 0 || allocate(&kept, 5000) != 0) exit(4);
}

int main(void) {
  void *runtime = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (runtime == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  if (((set_device_fn)lookup(runtime, "hipSetDevice"))(0) != 0) return 5;
  leak_through_hip_dlsym((malloc_fn)lookup(runtime, "hipMalloc"), (free_fn)lookup(runtime, "hipFree"));
  printf("hip_dlopen done\n");
  return 0;
}
