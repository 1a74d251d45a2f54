// Symbolization of report frames (see symbolizer.h).
#include "symbolizer.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
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

namespace {

// Names as the report shows them: demangled, without the symbol version
// ("__libc_start_main@@GLIBC_2.34").
std::string readable_name(std::string name) {
  if (size_t at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);
  return demangle(name.c_str());
}

}  // namespace

void Symbolizer::symbolize(Frame &frame, bool with_lines, std::vector<Frame> *inlined) {
  // Frames read back from a report file come symbolized already; so do frames without a
  // module, which cannot be.
  if (frame.module.empty() || frame.function || frame.file) return;
  auto key = std::make_tuple(frame.module, frame.build_id, frame.offset, with_lines);
  auto cached = cache_.find(key);
  if (cached == cache_.end()) {
    Symbolized result{frame, {}};
    ++lookups_;
    if (ModuleSymbols *module = module_for(frame.module, frame.build_id)) {
      // Frames hold return addresses; the call instruction is the byte before.
      FoundSymbol found = module->look_up(frame.offset > 0 ? frame.offset - 1 : 0, with_lines);
      auto fill = [&](Frame &into, SourcePlace &place) {
        if (place.function) into.function = names_.intern(readable_name(std::move(*place.function)));
        if (place.file) into.file = names_.intern(*place.file);
        into.line = place.line;
      };
      fill(result.frame, found.place);
      for (SourcePlace &place : found.inlined) {
        Frame call = frame;
        call.inlined = true;
        fill(call, place);
        result.inlined.push_back(std::move(call));
      }
    }
    cached = cache_.emplace(std::move(key), std::move(result)).first;
  }
  frame.function = cached->second.frame.function;
  frame.file = cached->second.frame.file;
  frame.line = cached->second.frame.line;
  if (inlined != nullptr) *inlined = cached->second.inlined;
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
    // The inlined calls found at each frame, placed before it in every stack once all are
    // looked up (process.frames grows then, not while its frames are in use).
    std::map<uint32_t, std::vector<Frame>> inlined_at;
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
        std::vector<Frame> inlined;
        if (state == Done::No) {
          // A frame that came symbolized (from a report file) is never looked up: as it came.
          const bool came_symbolized = frame.function || frame.file;
          symbolize(frame, with_lines, &inlined);
          state = with_lines || came_symbolized ? Done::WithLines : Done::WithoutLines;
        } else if (with_lines && state == Done::WithoutLines) {
          // Looked up without its line for another stack: again, with it.
          Frame again = frame;
          again.function.reset();
          again.file.reset();
          again.line.reset();
          symbolize(again, true, &inlined);
          if (again.function) frame = std::move(again);
          state = Done::WithLines;
        }
        if (!inlined.empty()) inlined_at[indices[i]] = std::move(inlined);
        below_main = below_main || is_main(frame);
      }
    }
    if (inlined_at.empty()) continue;
    std::map<uint32_t, std::vector<uint32_t>> inlined_indices;
    for (auto &[at, calls] : inlined_at)
      for (Frame &call : calls) {
        inlined_indices[at].push_back(static_cast<uint32_t>(process.frames.size()));
        process.frames.push_back(std::move(call));
      }
    for (uint32_t id : wanted) {
      auto stack = process.stacks.find(id);
      if (stack == process.stacks.end()) continue;
      std::vector<uint32_t> expanded;
      expanded.reserve(stack->second.size());
      for (uint32_t index : stack->second) {
        if (auto calls = inlined_indices.find(index); calls != inlined_indices.end())
          expanded.insert(expanded.end(), calls->second.begin(), calls->second.end());
        expanded.push_back(index);
      }
      stack->second = std::move(expanded);
    }
  }
}

}  // namespace leaseguard::report
