// A PTX module decoded once for the interpreter (ptx_machine.h runs it).
//
// Every function of the module is decoded into one flat list of instructions, each with the
// handler that runs it for the active lanes of a warp, so a launch decodes nothing. A warp
// keeps its registers as one 64-bit slot a lane (structure of arrays: register r of lane l
// at r * 32 + l); immediates, special registers and the addresses of symbols are registers
// too, filled when a warp starts, so every operand of every handler is a register number.
//
// State spaces, as the interpreter addresses them:
//   - global and const: the host addresses the simulator's device memory has;
//   - shared: offsets in the block's shared memory (static variables, then the dynamic part);
//   - local: offsets in the thread's frame, which holds every function's `.local` variables
//     and `.param` variables (its own and those of the calls it makes) at fixed places, so
//     a call copies its arguments from one place of the frame to another; recursion, which
//     would need frames of its own, is refused;
//   - param of a kernel: offsets in the launch's argument buffer;
//   - generic: host addresses; the block's shared memory and its threads' frames are
//     buffers of the host, so cvta adds or takes away their base.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace leaseguard::sim::ptx {

constexpr unsigned kWarpSize = 32;
constexpr uint32_t kNoRegister = UINT32_MAX;

struct Warp;
struct Instruction;
using Handler = void (*)(Warp &warp, const Instruction &instruction, uint32_t lanes);

// What the warp's scheduler does after the handler (most instructions: nothing, go on).
enum class Control : uint8_t {
  None,
  Branch,         // to `target`, for the lanes the guard lets through
  Call,           // a device function at `target`; `copies` move the arguments
  Return,         // from a device function, or from the kernel (the lanes exit)
  Exit,           // the lanes end
  Barrier,        // bar.sync / barrier.sync: `a` the barrier's number, `b` its thread count (or none)
  BarrierReduce,  // bar.red: a barrier that also reduces a predicate over the block
  Trap,           // the kernel fails (CUDA_ERROR_LAUNCH_FAILED)
  Printf,         // vprintf: `a` the format's address, `b` the arguments' (generic)
};

// A copy of `bytes` bytes within a thread's frame (a call's argument or result).
struct FrameCopy {
  uint32_t from = 0;
  uint32_t to = 0;
  uint32_t bytes = 0;
};

struct Instruction {
  Handler run = nullptr;
  Handler inner = nullptr;  // what a wrapper (rounding mode, saturation) runs
  Control control = Control::None;
  uint8_t vector = 1;            // elements of a vector load or store
  uint8_t space = 0;             // a memory access's state space (Space)
  uint8_t mode = 0;              // an operation's own variant (comparison, shuffle kind, ...)
  uint32_t mxcsr = 0;            // the floating-point control word a wrapper runs `inner` under
  uint8_t saturate = 0;          // .sat of a float result: its size (4 or 8), clamped to [0, 1]
  uint32_t guard = kNoRegister;  // predicate register, or none
  bool guard_negated = false;
  uint32_t d[4] = {kNoRegister, kNoRegister, kNoRegister, kNoRegister};         // destinations
  uint32_t a = kNoRegister, b = kNoRegister, c = kNoRegister, e = kNoRegister;  // sources
  uint32_t v[4] = {kNoRegister, kNoRegister, kNoRegister, kNoRegister};         // a stored vector's registers
  int64_t offset = 0;                                                           // an address's constant part
  uint32_t target = 0;            // a branch's or call's instruction index
  uint32_t frame_end = 0;         // Return from a function: its frame's return copies' start in `copies`
  std::vector<FrameCopy> copies;  // Call: arguments in; results back (after `frame_end` of them)
  uint32_t line = 0;              // the statement's line in the PTX text
  std::string text;               // the instruction as written (for messages)
};

enum class Space : uint8_t { Generic, Global, Const, Shared, Local, Param };

// A register filled when a warp starts: a constant, a special register, a symbol's address.
enum class Fill : uint8_t {
  Constant,      // `value`
  GlobalSymbol,  // the device address of module variable `symbol` in the launch's context
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NWarpId,
  SmId,
  NSmId,
  GridId,
  LanemaskEq,
  LanemaskLt,
  LanemaskLe,
  LanemaskGt,
  LanemaskGe,
  DynamicSharedSize,
  TotalSharedSize,
  DynamicSharedOffset,
};

struct FilledRegister {
  uint32_t index = 0;
  Fill fill = Fill::Constant;
  uint64_t value = 0;
  std::string symbol;
};

struct Parameter {
  std::string name;
  uint32_t size = 0;
  uint32_t alignment = 1;
  uint32_t offset = 0;  // in the kernel's argument buffer
};

struct Kernel {
  std::string name;
  uint32_t entry = 0;  // its first instruction
  std::vector<Parameter> parameters;
  uint32_t arguments_size = 0;
  uint32_t static_shared = 0;  // bytes of the module's `.shared` variables
  uint32_t frame_size = 0;     // bytes of a thread's frame: its functions' locals and parameters
  uint32_t dynamic_shared_alignment = 16;
  // The first instruction the interpreter does not run, reached from this kernel: the launch
  // is refused with it (empty: none).
  std::string refusal;
};

struct Program {
  std::vector<Instruction> code;
  std::vector<FilledRegister> filled;  // registers a warp starts with
  uint32_t registers = 0;              // per lane
  std::vector<std::string> globals;    // module variables the code takes the address of
  std::map<std::string, Kernel> kernels;
};

struct DecodeResult {
  std::unique_ptr<Program> program;
  std::string error;  // set where the text does not decode (a line saying where)
};

// Decodes PTX text as nvcc writes it. Instructions the interpreter does not run decode to a
// refusal of the kernels that reach them, not an error.
DecodeResult decode(const std::string &text);

}  // namespace leaseguard::sim::ptx
