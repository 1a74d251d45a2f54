// Module symbols from debug information, through elfutils libdw (see module_symbols.h).
#include <elfutils/libdwfl.h>

#include "module_symbols.h"

#include <unistd.h>

#include "files.h"

namespace leaseguard::report {
namespace {

const Dwfl_Callbacks kOfflineCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    nullptr,
};

std::string hex(const unsigned char *bytes, int size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (int i = 0; i < size; ++i) {
    text.push_back(digits[bytes[i] >> 4]);
    text.push_back(digits[bytes[i] & 15]);
  }
  return text;
}

class DebugInfoModule final : public ModuleSymbols {
 public:
  ~DebugInfoModule() override {
    if (session_ != nullptr) dwfl_end(session_);
  }

  bool open(const std::string &path) {
    session_ = dwfl_begin(&kOfflineCallbacks);
    if (session_ == nullptr) return false;
    // Placed at address 0, so a module-relative offset plus the load bias libdwfl reports
    // is the address to look up, for shared objects, PIE and fixed-address executables.
    // A module path comes from a journal: never a FIFO or a device (files.h). The
    // library takes the descriptor if it succeeds.
    std::string error;
    const int fd = open_regular_file(path, error);
    if (fd < 0) return false;
    module_ = dwfl_report_elf(session_, path.c_str(), path.c_str(), fd, 0, false);
    if (module_ == nullptr) ::close(fd);
    dwfl_report_end(session_, nullptr, nullptr);
    return module_ != nullptr && dwfl_module_getelf(module_, &bias_) != nullptr;
  }

  std::string build_id() const override {
    const unsigned char *bits = nullptr;
    GElf_Addr vaddr = 0;
    const int length = dwfl_module_build_id(module_, &bits, &vaddr);
    return length > 0 ? hex(bits, length) : "";
  }

  FoundSymbol look_up(uint64_t address, bool with_line) override {
    FoundSymbol found;
    const Dwarf_Addr at = bias_ + address;
    if (const char *name = dwfl_module_addrname(module_, at)) found.function = name;
    if (Dwfl_Line *line = with_line ? dwfl_module_getsrc(module_, at) : nullptr) {
      int number = 0;
      if (const char *file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
        found.file = file;
        if (number > 0) found.line = number;
      }
    }
    return found;
  }

 private:
  Dwfl *session_ = nullptr;
  Dwfl_Module *module_ = nullptr;
  Dwarf_Addr bias_ = 0;
};

}  // namespace

std::unique_ptr<ModuleSymbols> open_debug_info_module(const std::string &path) {
  auto module = std::make_unique<DebugInfoModule>();
  if (!module->open(path)) return nullptr;
  return module;
}

}  // namespace leaseguard::report
