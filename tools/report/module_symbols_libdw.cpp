// Module symbols from debug information, through elfutils libdw (see module_symbols.h).
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "module_symbols.h"

#include <unistd.h>

#include <cstdlib>

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
    if (const char *name = dwfl_module_addrname(module_, at)) found.place.function = name;
    if (!with_line) return found;
    if (Dwfl_Line *line = dwfl_module_getsrc(module_, at)) {
      int number = 0;
      if (const char *file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
        found.place.file = file;
        if (number > 0) found.place.line = number;
      }
    }
    add_inlined_calls(at, found);
    return found;
  }

 private:
  // The calls inlined at `at`, from the scopes that contain it (DWARF's
  // DW_TAG_inlined_subroutine, innermost first): the line found at the address belongs to
  // the innermost inlined function, and each inlined scope's DW_AT_call_file/call_line is
  // the line, in the scope around it, that called it. The place found so far moves to the
  // innermost inlined function; the symbol table's function keeps the outermost call.
  void add_inlined_calls(Dwarf_Addr at, FoundSymbol &found) {
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *unit = dwfl_module_addrdie(module_, at, &cu_bias);
    if (unit == nullptr) return;
    // dwarf_getscopes goes out from an inlined function to its abstract definition's
    // scopes; the scopes it was inlined into are those around the innermost DIE itself.
    Dwarf_Die *innermost = nullptr;
    if (dwarf_getscopes(unit, at - cu_bias, &innermost) <= 0) {
      std::free(innermost);
      return;
    }
    Dwarf_Die *scopes = nullptr;
    const int count = dwarf_getscopes_die(&innermost[0], &scopes);
    std::free(innermost);
    if (count <= 0) {
      std::free(scopes);
      return;
    }
    Dwarf_Files *files = nullptr;
    size_t file_count = 0;
    if (dwarf_getsrcfiles(unit, &files, &file_count) != 0) files = nullptr;
    SourcePlace line_here = found.place;  // the line at the address, in the innermost function
    for (int i = 0; i < count; ++i) {
      Dwarf_Die *scope = &scopes[i];
      if (dwarf_tag(scope) != DW_TAG_inlined_subroutine) {
        if (dwarf_tag(scope) == DW_TAG_subprogram) break;  // the function itself: the symbol's
        continue;                                          // a lexical block
      }
      SourcePlace inlined;
      inlined.function = function_name(scope);
      inlined.file = line_here.file;
      inlined.line = line_here.line;
      found.inlined.push_back(std::move(inlined));
      // Where this inlined function was called: the next scope out's line.
      line_here = SourcePlace{};
      Dwarf_Attribute attribute;
      Dwarf_Word value = 0;
      if (files != nullptr && dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &attribute), &value) == 0 &&
          value < file_count)
        if (const char *file = dwarf_filesrc(files, value, nullptr, nullptr)) line_here.file = file;
      if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &attribute), &value) == 0 && value > 0)
        line_here.line = static_cast<int>(value);
    }
    std::free(scopes);
    if (found.inlined.empty()) return;
    found.place.file = line_here.file;
    found.place.line = line_here.line;
  }

  // An inlined function's name from its abstract origin: the linkage (mangled) name where it
  // has one, so it reads as the symbol table's names do once demangled; else its plain name.
  static std::optional<std::string> function_name(Dwarf_Die *scope) {
    Dwarf_Attribute attribute;
    for (int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name})
      if (const char *text = dwarf_formstring(dwarf_attr_integrate(scope, name, &attribute))) return std::string(text);
    return std::nullopt;
  }

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
