// Where the symbolizer finds names for a module's code: its debug information through
// elfutils libdw (function, file and line), or, in a build without libdw, its ELF symbol
// tables (the function only). Both answer for module-relative offsets, which are link-time
// virtual addresses (core/stacks/module_map.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leaseguard::report {

// A function and a place in its source.
struct SourcePlace {
  std::optional<std::string> function;  // as the module spells it: mangled, maybe versioned
  std::optional<std::string> file;
  std::optional<int> line;
};

// What is known of the code at one address. Where the compiler inlined calls there, one
// address stands for several calls: `inlined` holds the inlined functions, innermost first,
// the first with the line at the address and each next one with the line of its call to the
// one before it; the function the symbol table names at the address comes last, in `place`,
// with the line of its call to the outermost inlined one (or the line at the address where
// nothing was inlined).
struct FoundSymbol {
  SourcePlace place;
  std::vector<SourcePlace> inlined;
};

class ModuleSymbols {
 public:
  virtual ~ModuleSymbols() = default;
  // The GNU build-id as lowercase hex; empty if the module has none.
  virtual std::string build_id() const = 0;
  // What is known of the code at `address`; the source lines and inlined calls only if
  // `with_line`.
  virtual FoundSymbol look_up(uint64_t address, bool with_line) = 0;
};

enum class SymbolSource {
  DebugInfo,    // elfutils libdw: DWARF lines, then symbol tables, debug files found by build-id
  SymbolTable,  // the ELF symbol tables alone (elf_symbols.h)
};

// DebugInfo where this build has libdw, SymbolTable otherwise.
SymbolSource best_symbol_source();
bool symbol_source_available(SymbolSource source);

// The module at `path` read by `source`; nullptr if it cannot be read (or `source` is not in
// this build).
std::unique_ptr<ModuleSymbols> open_module_symbols(SymbolSource source, const std::string &path);

// The two sources' own openers (module_symbols_libdw.cpp, built only with libdw, and
// module_symbols_elf.cpp).
std::unique_ptr<ModuleSymbols> open_debug_info_module(const std::string &path);
std::unique_ptr<ModuleSymbols> open_symbol_table_module(const std::string &path);

}  // namespace leaseguard::report
