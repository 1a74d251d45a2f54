// Maps code addresses to (module, offset) and writes each module to the journal once.
//
// A module record carries the path, load base and GNU build-id, which is everything the
// CLI needs to symbolize offline, also after the module was unloaded with dlclose.
// Called only when a new stack is interned, never per allocation. After a library is
// unloaded (code_generation.h) every module is looked up afresh.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "journal_writer.h"
#include "stack_capture.h"

namespace leaseguard {

struct ModuleLocation {
  uint32_t module_id = journal::kNoModule;
  uint64_t offset = 0;  // relative to the module's load base; the address if no module
};

class ModuleMap {
 public:
  // Resolves `address`; on first sight of its module, appends a Module record to `journal`.
  ModuleLocation locate(uintptr_t address, journal::JournalWriter &journal);

  // The text range of the module containing `address` (used to skip our own frames).
  static CodeRange module_range(uintptr_t address);

 private:
  struct Module {
    uintptr_t base;
    uintptr_t begin;
    uintptr_t end;
    uint32_t id;
  };
  void forget_unloaded_locked();

  std::mutex mutex_;
  std::vector<Module> modules_;
  uint64_t generation_ = 0;  // the code generation modules_ describes
  uint32_t next_id_ = 1;
};

}  // namespace leaseguard
