/* A small real ELF file for the damaged-file test (elf_symbols_test.cpp), which parses its
 * file about 1,800 times: the test program itself has tens of thousands of symbols, and
 * parsing it that often took minutes under the sanitizers. */
__attribute__((noinline, visibility("hidden"))) int elf_sample_marker(int value) {
  __asm__ volatile("" : "+r"(value));
  return value * 5 + 2;
}

/* The marker's own address: taken inside the library, so not a stub of the program's. */
__attribute__((visibility("default"))) const void *elf_sample_marker_address(void) {
  return (const void *)&elf_sample_marker;
}
