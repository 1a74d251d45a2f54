/* A program that embeds Python with an object allocator of its own (PyMem_SetAllocator before
 * Py_Initialize, as embedders do to account for the interpreter's memory): objects whose
 * layout leaseguard does not know, which may hold device memory it cannot find. Its lost
 * allocations are unchecked and the report says why. 1501 bytes are held by a global, 3501
 * dropped. Prints "no libpython" and exits 0 where the library is missing. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "victim.h"

typedef struct {
  void *context;
  void *(*malloc)(void *context, size_t bytes);
  void *(*calloc)(void *context, size_t count, size_t bytes);
  void *(*realloc)(void *context, void *pointer, size_t bytes);
  void (*free)(void *context, void *pointer);
} Allocator;
enum { kObjectDomain = 2 }; /* PYMEM_DOMAIN_OBJ */

/* A bump allocator over memory the program maps itself; a block's size is kept before it. */
static char *g_arena;
static size_t g_used;
static const size_t kArenaBytes = 64u << 20;

static void *bump_malloc(void *context, size_t bytes) {
  (void)context;
  const size_t need = 16 + ((bytes + 15) & ~(size_t)15);
  if (g_used + need > kArenaBytes) return NULL;
  char *block = g_arena + g_used + 16;
  memcpy(block - 8, &bytes, sizeof bytes);
  g_used += need;
  return block;
}
static void *bump_calloc(void *context, size_t count, size_t bytes) {
  void *block = bump_malloc(context, count * bytes);
  if (block != NULL) memset(block, 0, count * bytes);
  return block;
}
static void *bump_realloc(void *context, void *pointer, size_t bytes) {
  void *block = bump_malloc(context, bytes);
  if (block != NULL && pointer != NULL) {
    size_t old;
    memcpy(&old, (char *)pointer - 8, sizeof old);
    memcpy(block, pointer, old < bytes ? old : bytes);
  }
  return block;
}
static void bump_free(void *context, void *pointer) {
  (void)context;
  (void)pointer;
}

static CUdeviceptr g_held;

static VICTIM_NOINLINE void drop(size_t bytes) {
  CUdeviceptr dropped;
  CHECK(cuMemAlloc_v2(&dropped, bytes));
}

/* ARGV[1], if given: the libpython to load (the tests choose it); else the loader's. */
int main(int argc, char **argv) {
  void *python = argc > 1 && argv[1][0] != '\0' ? dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) : NULL;
  if (python == NULL) python = dlopen("libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL);
  if (python == NULL) python = dlopen("libpython3.so", RTLD_NOW | RTLD_GLOBAL);
  if (python == NULL) {
    printf("no libpython\n");
    return 0;
  }
  void (*set_allocator)(int, Allocator *) = (void (*)(int, Allocator *))dlsym(python, "PyMem_SetAllocator");
  void (*initialize)(int) = (void (*)(int))dlsym(python, "Py_InitializeEx");
  int (*run)(const char *) = (int (*)(const char *))dlsym(python, "PyRun_SimpleString");
  if (set_allocator == NULL || initialize == NULL || run == NULL) {
    printf("no libpython\n");
    return 0;
  }
  g_arena = mmap(NULL, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_arena == MAP_FAILED) return 2;
  Allocator mine = {NULL, bump_malloc, bump_calloc, bump_realloc, bump_free};
  set_allocator(kObjectDomain, &mine);
  initialize(0);

  victim_primary_context();
  CHECK(cuMemAlloc_v2(&g_held, 1501));
  drop(3501);
  /* Bytecode, so the interpreter runs the call leaseguard's first allocation asked it for. */
  if (run("total = 0\nfor i in range(10000):\n    total += i\n") != 0) return 4;
  return 0; /* classified at C's exit, the interpreter still initialized */
}
