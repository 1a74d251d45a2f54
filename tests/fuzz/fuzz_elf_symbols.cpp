// libFuzzer target: reading function symbols and the build-id from an ELF image (what the
// report does to every module a journal names, without libdw), then looking up addresses
// around the symbols it found and past them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "elf_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  const std::string_view image(reinterpret_cast<const char *>(data), size);
  auto symbols = leaseguard::report::ElfSymbols::parse(image, error);
  if (!symbols) return 0;
  for (uint64_t address :
       {uint64_t{0}, uint64_t{1}, uint64_t{0x2d0}, uint64_t{0x2d4}, uint64_t{0x2e0}, uint64_t{0x1000}, UINT64_MAX})
    symbols->function_at(address);
  (void)symbols->build_id().size();
  return 0;
}
