// Function names from an ELF file's symbol table, for the symbolizer on machines without
// elfutils (GPU images often lack it): the full table (.symtab) if the file has one, else the
// one in its separate debug file under /usr/lib/debug/.build-id, else the dynamic table
// (.dynsym, the exported functions only). No source lines: those need the debug
// information that libdw reads.
//
// The file is mapped read-only for the object's life; every offset and size in it is
// checked before use, so a damaged or truncated file yields no names, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leaseguard::report {

class ElfSymbols {
 public:
  // Reads the symbols of the ELF image in `bytes`, which must outlive the result. Returns
  // nullptr, with `error` set, if it is not a 64-bit little-endian ELF file.
  static std::unique_ptr<ElfSymbols> parse(std::string_view bytes, std::string &error);
  // Maps `path` and reads it, then looks in its separate debug file if it has no full table.
  static std::unique_ptr<ElfSymbols> open(const std::string &path, std::string &error);

  ~ElfSymbols();
  ElfSymbols(const ElfSymbols &) = delete;
  ElfSymbols &operator=(const ElfSymbols &) = delete;

  // The name of the function containing `address` (a link-time virtual address, which is
  // what a module-relative offset is), as the table spells it (mangled, with any symbol
  // version); empty if none does.
  std::string_view function_at(uint64_t address) const;
  // The GNU build-id note as lowercase hex; empty if the file has none.
  const std::string &build_id() const { return build_id_; }
  // True if the names came from a full symbol table (.symtab), not only the dynamic one.
  bool has_full_table() const { return full_table_; }

 private:
  struct Symbol {
    uint64_t address;
    uint64_t end;  // past its last byte; for a symbol of size 0, the end of its section
    std::string_view name;
    uint8_t rank;  // prefer global over weak over local among symbols at one address
    bool sized;
  };
  ElfSymbols() = default;
  bool take_symbols_from(std::string_view bytes, bool full_table);

  std::vector<Symbol> symbols_;  // sorted by address, then by preference
  std::string build_id_;
  bool full_table_ = false;
  // Mappings the names point into: this file's, and its debug file's if it was read.
  struct Mapping;
  static std::unique_ptr<Mapping> map_file(const std::string &path, std::string &error);
  std::vector<std::unique_ptr<Mapping>> mappings_;
};

}  // namespace leaseguard::report
