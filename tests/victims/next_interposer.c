/* A library that interposes puts() the classic way: it defines puts and forwards to the
 * next definition with dlsym(RTLD_NEXT, "puts"). Under leaseguard's dlsym that lookup must
 * still start after this library, or it would find itself and recurse forever. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>

int interposed_puts_calls = 0;

int puts(const char *text) {
  static int (*next_puts)(const char *);
  if (next_puts == NULL) next_puts = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
  if (next_puts == NULL || next_puts == puts) return EOF;
  ++interposed_puts_calls;
  return next_puts(text);
}
