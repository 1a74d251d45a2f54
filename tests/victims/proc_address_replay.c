/* Replays every (symbol, cudaVersion, flags) lookup the CUDA 13.0 runtime makes, from
 * tests/data/cudart-13.0-driver-lookups.tsv, through cuGetProcAddress_v2 as obtained the
 * runtime's way (dlopen + dlsym on the handle), and checks each answer:
 *   - a variant leaseguard hooks must come back as leaseguard's wrapper of exactly that
 *     variant (the preload's definition of the exported_variant name);
 *   - any other symbol must come back as the driver's own export of exported_variant, or
 *     NULL with success when the simulated driver does not implement it.
 * Prints each mismatch and exits 1 if there was any. Run it under the preload.
 * Usage: proc_address_replay LOOKUPS.tsv HOOKED_NAMES... */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <string.h>

#include "victim.h"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static int hooked(const char *name, int argc, char **argv) {
  for (int i = 2; i < argc; ++i)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s LOOKUPS.tsv HOOKED_NAMES...\n", argv[0]);
    return 2;
  }
  FILE *lookups = fopen(argv[1], "r");
  if (lookups == NULL) {
    perror(argv[1]);
    return 2;
  }
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) return 2;
  get_proc_fn get_proc = (get_proc_fn)dlsym(driver, "cuGetProcAddress_v2");
  /* The preload's definitions are first in the global scope: that is what "leaseguard's
   * wrapper" of a name means. */
  get_proc_fn wrapper_of_get_proc = (get_proc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
  if (get_proc == NULL || get_proc != wrapper_of_get_proc) {
    fprintf(stderr, "dlsym(handle, cuGetProcAddress_v2) is not leaseguard's wrapper\n");
    return 1;
  }

  char line[512];
  int checked = 0, wrapped = 0, mismatches = 0;
  while (fgets(line, sizeof line, lookups) != NULL) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char symbol[200], variant[200];
    int version;
    unsigned long long flags;
    if (sscanf(line, "%199s %d %llu %199s", symbol, &version, &flags, variant) != 4) {
      fprintf(stderr, "bad line: %s", line);
      return 2;
    }
    void *function = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = get_proc(symbol, &function, version, flags, &status);
    void *expected;
    if (hooked(variant, argc, argv)) {
      expected = dlsym(RTLD_DEFAULT, variant);
      Dl_info info;
      if (dladdr(expected, &info) == 0 || strstr(info.dli_fname, "libleaseguard_preload") == NULL) {
        fprintf(stderr, "%s is not defined by the preload: is it loaded?\n", variant);
        return 1;
      }
      ++wrapped;
    } else {
      /* dlsym on the handle passes names leaseguard does not hook through untouched. */
      expected = dlsym(driver, variant);
    }
    if (result != CUDA_SUCCESS || function != expected || status != CU_GET_PROC_ADDRESS_SUCCESS) {
      fprintf(stderr, "MISMATCH %s %d %llu -> %s: got %p (result %d, status %d), expected %p\n", symbol, version, flags,
              variant, function, (int)result, (int)status, expected);
      ++mismatches;
    }
    ++checked;
  }
  fclose(lookups);
  printf("replayed %d lookups, %d of them hooked variants, %d mismatches\n", checked, wrapped, mismatches);
  return mismatches == 0 && checked > 400 && wrapped > 0 ? 0 : 1;
}
