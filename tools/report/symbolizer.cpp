// Symbolization with elfutils libdw (see symbolizer.h).
#include "symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "program_frames.h"

namespace leaseguard::report {

struct Symbolizer::Module {
  Dwfl *session = nullptr;
  Dwfl_Module *module = nullptr;
  Dwarf_Addr bias = 0;
  ~Module() {
    if (session != nullptr) dwfl_end(session);
  }
};

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

}  // namespace

std::string demangle(const char *name) {
  int status = 0;
  char *demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Symbolizer::Module *Symbolizer::module_for(const std::string &path, const std::string &build_id) {
  auto key = std::make_pair(path, build_id);
  auto found = modules_.find(key);
  if (found != modules_.end()) return found->second.get();
  auto &slot = modules_[key];
  auto module = std::make_unique<Module>();
  module->session = dwfl_begin(&kOfflineCallbacks);
  if (module->session == nullptr) return nullptr;
  // Placed at address 0, so a module-relative offset plus the load bias libdwfl reports is
  // the address to look up, for shared objects, PIE and fixed-address executables alike.
  module->module = dwfl_report_elf(module->session, path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(module->session, nullptr, nullptr);
  if (module->module == nullptr) {
    unusable_[path] = "cannot be read";
    return nullptr;
  }
  const unsigned char *bits = nullptr;
  GElf_Addr vaddr = 0;
  int length = dwfl_module_build_id(module->module, &bits, &vaddr);
  std::string actual = length > 0 ? hex(bits, length) : "";
  if (!build_id.empty() && actual != build_id) {
    unusable_[path] = "was rebuilt since the run (build-id " + (actual.empty() ? std::string("none") : actual) +
                      ", recorded " + build_id + ")";
    return nullptr;
  }
  Elf *elf = dwfl_module_getelf(module->module, &module->bias);
  if (elf == nullptr) {
    unusable_[path] = "cannot be read";
    return nullptr;
  }
  slot = std::move(module);
  return slot.get();
}

void Symbolizer::symbolize(Frame &frame, bool with_lines) {
  // Frames read back from a report file come symbolized already; so do frames without a
  // module, which cannot be.
  if (frame.module.empty() || frame.function || frame.file) return;
  auto key = std::make_tuple(frame.module, frame.build_id, frame.offset, with_lines);
  if (auto cached = cache_.find(key); cached != cache_.end()) {
    frame.function = cached->second.function;
    frame.file = cached->second.file;
    frame.line = cached->second.line;
    return;
  }
  Frame result = frame;
  ++lookups_;
  if (Module *module = module_for(frame.module, frame.build_id)) {
    // Frames hold return addresses; the call instruction is the byte before.
    Dwarf_Addr address = module->bias + (frame.offset > 0 ? frame.offset - 1 : 0);
    if (const char *name = dwfl_module_addrname(module->module, address)) {
      // Drop the symbol version ("__libc_start_main@@GLIBC_2.34"): not part of the name.
      std::string plain(name);
      if (size_t at = plain.find('@'); at != std::string::npos && at > 0) plain.resize(at);
      result.function = demangle(plain.c_str());
    }
    if (Dwfl_Line *line = with_lines ? dwfl_module_getsrc(module->module, address) : nullptr) {
      int number = 0;
      if (const char *file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
        result.file = file;
        if (number > 0) result.line = number;
      }
    }
  }
  frame.function = result.function;
  frame.file = result.file;
  frame.line = result.line;
  cache_.emplace(std::move(key), std::move(result));
}

void Symbolizer::symbolize(Report &report) {
  // Only stacks that a leak, a late free or a double free refers to: a long run interns many
  // stacks that never leak.
  for (ProcessReport &process : report.processes) {
    std::set<uint32_t> wanted;
    for (const LeaseEnding &lease : process.leases) {
      for (const Leak &leak : lease.leaks) wanted.insert(leak.stack_id);
      for (const LateFree &late : lease.late_frees) wanted.insert(late.stack_id);
    }
    for (const DoubleFree &twice : process.double_frees) wanted.insert(twice.stack_id);
    // Stacks share frames (ProcessReport::frames): each is looked up once, with its source
    // line if any stack wants it there (above main and the trailing C library frames).
    enum class Done : uint8_t { No, WithoutLines, WithLines };
    std::vector<Done> done(process.frames.size(), Done::No);
    for (uint32_t id : wanted) {
      auto stack = process.stacks.find(id);
      if (stack == process.stacks.end()) continue;
      const std::vector<uint32_t> &indices = stack->second;
      const size_t c_library_begin = trailing_c_library_frames_begin(process.stack(id));
      bool below_main = false;
      for (size_t i = 0; i < indices.size(); ++i) {
        Frame &frame = process.frames[indices[i]];
        const bool with_lines = !below_main && i < c_library_begin;
        Done &state = done[indices[i]];
        if (state == Done::No) {
          // A frame that came symbolized (from a report file) is never looked up: as it came.
          const bool came_symbolized = frame.function || frame.file;
          symbolize(frame, with_lines);
          state = with_lines || came_symbolized ? Done::WithLines : Done::WithoutLines;
        } else if (with_lines && state == Done::WithoutLines) {
          // Looked up without its line for another stack: again, with it.
          Frame again = frame;
          again.function.reset();
          again.file.reset();
          again.line.reset();
          symbolize(again, true);
          if (again.function) frame = std::move(again);
          state = Done::WithLines;
        }
        below_main = below_main || is_main(frame);
      }
    }
  }
}

}  // namespace leaseguard::report
