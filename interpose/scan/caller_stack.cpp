#include "caller_stack.h"

#include <dlfcn.h>
#include <unwind.h>

#include <cstdlib>

namespace leaseguard::interpose {
namespace {

// The modules whose frames make up the call path: libc (exit and the handlers' runner) and
// leaseguard's preload, by their load bases.
struct CallPath {
  const void *libc = nullptr;
  const void *leaseguard = nullptr;
  bool contains(uintptr_t pc) const noexcept {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(pc), &info) == 0) return false;
    return info.dli_fbase != nullptr && (info.dli_fbase == libc || info.dli_fbase == leaseguard);
  }
};

const void *module_base_of(void *address) noexcept {
  Dl_info info{};
  return dladdr(address, &info) != 0 ? info.dli_fbase : nullptr;
}

struct Walk {
  uintptr_t caller_frame;
  CallPath path;
  CallerStack result;
};

// DWARF register numbers on x86-64 of what CallerStack::registers holds.
constexpr int kCalleeSaved[CallerStack::kRegisters] = {3 /* rbx */, 6 /* rbp */, 12, 13, 14, 15};

_Unwind_Reason_Code visit(_Unwind_Context *context, void *argument) {
  auto &walk = *static_cast<Walk *>(argument);
  // The unwinder's CFA here is the frame it last stepped out of, that is the stack pointer of
  // this frame at its call: where this frame's own slots begin. (Taking the CFA met one frame
  // earlier would take in the whole frame of the call path's last function, whose unwritten
  // slots hold what the program's earlier calls left there.)
  const auto frame_sp = static_cast<uintptr_t>(_Unwind_GetCFA(context));
  int before_instruction = 0;
  const auto ip = static_cast<uintptr_t>(_Unwind_GetIPInfo(context, &before_instruction));
  if (ip == 0) return _URC_END_OF_STACK;
  // Below the caller: the classifying function's own frames.
  const bool own = frame_sp < walk.caller_frame;
  // A return address points past its call, which may be the last instruction of a function.
  const uintptr_t pc = before_instruction != 0 ? ip : ip - 1;
  if (own || walk.path.contains(pc)) return _URC_NO_REASON;
  walk.result.found = true;
  walk.result.begin = frame_sp;
  for (int i = 0; i < CallerStack::kRegisters; ++i)
    walk.result.registers[i] = static_cast<uint64_t>(_Unwind_GetGR(context, kCalleeSaved[i]));
  return _URC_END_OF_STACK;
}

}  // namespace

CallerStack find_caller_stack(uintptr_t caller_frame) noexcept {
  Walk walk{caller_frame,
            CallPath{module_base_of(reinterpret_cast<void *>(&std::exit)),
                     module_base_of(reinterpret_cast<void *>(&find_caller_stack))},
            CallerStack{}};
  _Unwind_Backtrace(visit, &walk);
  return walk.result;
}

}  // namespace leaseguard::interpose
