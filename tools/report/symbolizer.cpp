// Symbolization of report frames (see symbolizer.h).
#include "symbolizer.h"

#include <cxxabi.h>

#include <cstdlib>
#include <set>

#include "program_frames.h"

namespace leaseguard::report {

std::string demangle(const char *name) {
  int status = 0;
  char *demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

Symbolizer::Symbolizer(SymbolSource source) : source_(source) {}
Symbolizer::~Symbolizer() = default;

ModuleSymbols *Symbolizer::module_for(const std::string &path, const std::string &build_id) {
  auto key = std::make_pair(path, build_id);
  auto found = modules_.find(key);
  if (found != modules_.end()) return found->second.get();
  auto &slot = modules_[key];
  std::unique_ptr<ModuleSymbols> module = open_module_symbols(source_, path);
  if (module == nullptr) {
    unusable_[path] = "cannot be read";
    return nullptr;
  }
  const std::string actual = module->build_id();
  if (!build_id.empty() && actual != build_id) {
    unusable_[path] = "was rebuilt since the run (build-id " + (actual.empty() ? std::string("none") : actual) +
                      ", recorded " + build_id + ")";
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
  if (ModuleSymbols *module = module_for(frame.module, frame.build_id)) {
    // Frames hold return addresses; the call instruction is the byte before.
    FoundSymbol found = module->look_up(frame.offset > 0 ? frame.offset - 1 : 0, with_lines);
    if (found.function) {
      // Drop the symbol version ("__libc_start_main@@GLIBC_2.34"): not part of the name.
      std::string plain = std::move(*found.function);
      if (size_t at = plain.find('@'); at != std::string::npos && at > 0) plain.resize(at);
      result.function = names_.intern(demangle(plain.c_str()));
    }
    if (found.file) result.file = names_.intern(*found.file);
    result.line = found.line;
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
      for (const Leak &leak : lease.reachable) wanted.insert(leak.stack_id);
      for (const LateFree &late : lease.late_frees) wanted.insert(late.stack_id);
    }
    for (const DoubleFree &twice : process.double_frees) wanted.insert(twice.stack_id);
    for (const WrongFamilyFree &wrong : process.wrong_family_frees) wanted.insert(wrong.stack_id);
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
