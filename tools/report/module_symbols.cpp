// Which symbol sources this build has (see module_symbols.h).
#include "module_symbols.h"

namespace leaseguard::report {

#ifdef LEASEGUARD_HAVE_LIBDW
constexpr bool kHaveLibdw = true;
#else
constexpr bool kHaveLibdw = false;
std::unique_ptr<ModuleSymbols> open_debug_info_module(const std::string &) { return nullptr; }
#endif

SymbolSource best_symbol_source() { return kHaveLibdw ? SymbolSource::DebugInfo : SymbolSource::SymbolTable; }

bool symbol_source_available(SymbolSource source) { return source == SymbolSource::SymbolTable || kHaveLibdw; }

std::unique_ptr<ModuleSymbols> open_module_symbols(SymbolSource source, const std::string &path) {
  switch (source) {
    case SymbolSource::DebugInfo: return open_debug_info_module(path);
    case SymbolSource::SymbolTable: return open_symbol_table_module(path);
  }
  return nullptr;
}

}  // namespace leaseguard::report
