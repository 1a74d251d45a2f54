/* Uses puts() through next_interposer.so (preloaded or linked) and checks it forwarded. */
#include <stdio.h>

extern int interposed_puts_calls __attribute__((weak));

int main(void) {
  if (puts("through the interposer") == EOF) return 1;
  if (&interposed_puts_calls == NULL || interposed_puts_calls != 1) return 2;
  return 0;
}
