// Module symbols from ELF symbol tables (see module_symbols.h).
#include "elf_symbols.h"
#include "module_symbols.h"

namespace leaseguard::report {
namespace {

class SymbolTableModule final : public ModuleSymbols {
 public:
  explicit SymbolTableModule(std::unique_ptr<ElfSymbols> symbols) : symbols_(std::move(symbols)) {}
  std::string build_id() const override { return symbols_->build_id(); }
  FoundSymbol look_up(uint64_t address, bool) override {
    FoundSymbol found;
    std::string_view name = symbols_->function_at(address);
    if (!name.empty()) found.place.function = std::string(name);
    return found;
  }

 private:
  std::unique_ptr<ElfSymbols> symbols_;
};

}  // namespace

std::unique_ptr<ModuleSymbols> open_symbol_table_module(const std::string &path) {
  std::string error;
  std::unique_ptr<ElfSymbols> symbols = ElfSymbols::open(path, error);
  if (!symbols) return nullptr;
  return std::make_unique<SymbolTableModule>(std::move(symbols));
}

}  // namespace leaseguard::report
