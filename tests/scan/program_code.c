/* Code of "the program" for the scan's unit tests: a library apart from the test binary, which
 * the mechanisms under test are linked into as they are into the preload (whose own calls they
 * leave out). Its calls to mmap, munmap and mremap reach theirs through the global scope, as a
 * program's do. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>

void *program_map(size_t bytes) {
  return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

void *program_map_unreadable(size_t bytes) { return mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }

int program_unmap(void *address, size_t bytes) { return munmap(address, bytes); }

void *program_remap(void *address, size_t old_bytes, size_t new_bytes) {
  return mremap(address, old_bytes, new_bytes, MREMAP_MAYMOVE);
}
