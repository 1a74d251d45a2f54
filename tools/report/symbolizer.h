// Offline symbolization: function, file and line for (module, build-id, offset), from the
// module's debug information (elfutils libdw), falling back to its symbol table, and to
// module+offset when nothing is known; in a build without libdw, the function from the
// symbol tables alone (module_symbols.h). Results are cached per frame, and each module is
// opened once. A module whose build-id no longer matches the one recorded is not used:
// a name from a different build would be invented, not found.
//
// Calls the compiler inlined are expanded from the debug information: one recorded frame
// (one return address) becomes the inlined functions, innermost first, each a frame marked
// `inlined` with the same address, then the function that holds the code, as addr2line -i
// prints them. Stacks read back from a report file come expanded already.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "module_symbols.h"
#include "report_model.h"

namespace leaseguard::report {

class Symbolizer {
 public:
  explicit Symbolizer(SymbolSource source = best_symbol_source());
  ~Symbolizer();
  Symbolizer(const Symbolizer &) = delete;
  Symbolizer &operator=(const Symbolizer &) = delete;

  // with_lines false: the function's name only, no source line and no inlined calls
  // (program_frames.h says for which frames). The inlined calls at the frame's address, if
  // `inlined` is given: innermost first, to be placed before the frame.
  void symbolize(Frame &frame, bool with_lines = true, std::vector<Frame> *inlined = nullptr);
  // Every frame of the stacks a report lists; the C library's below the program's own
  // (program_frames.h) without source lines.
  void symbolize(Report &report);

  // How many frames were looked up in debug information (each distinct frame once).
  uint64_t lookups() const { return lookups_; }

  // Modules whose file was missing or rebuilt since the run.
  const std::map<std::string, std::string> &unusable_modules() const { return unusable_; }

 private:
  ModuleSymbols *module_for(const std::string &path, const std::string &build_id);

  SymbolSource source_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ModuleSymbols>> modules_;
  struct Symbolized {
    Frame frame;
    std::vector<Frame> inlined;
  };
  std::map<std::tuple<Text, Text, uint64_t, bool>, Symbolized> cache_;  // module, build-id, offset, with_lines
  TextPool names_;                                                      // functions' and files' names, each kept once
  std::map<std::string, std::string> unusable_;
  uint64_t lookups_ = 0;
};

std::string demangle(const char *name);

}  // namespace leaseguard::report
