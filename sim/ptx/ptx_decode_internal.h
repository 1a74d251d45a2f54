// Between the reader of PTX statements (ptx_decode.cpp) and the decoder of instructions
// (ptx_instructions.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptx_program.h"

namespace leaseguard::sim::ptx {

struct Operand {
  enum Kind : uint8_t { Name, Literal, Address, Vector, Sink } kind = Name;
  std::string text;               // a register, special register, symbol or label; a literal
  bool negated = false;           // `!%p`
  std::string second;             // `%p|%q`: q
  std::vector<Operand> elements;  // `{a, b}`
  int64_t offset = 0;             // `[base+offset]`; text is the base (empty: none)
};

struct Statement {
  std::vector<std::string> opcode;  // `ld.global.f32` -> ld, global, f32
  std::string guard;
  bool guard_negated = false;
  std::vector<Operand> operands;
  unsigned line = 0;
  std::string text;
};

// Element types of PTX.
enum class Type : uint8_t {
  None,
  S8,
  S16,
  S32,
  S64,
  U8,
  U16,
  U32,
  U64,
  B8,
  B16,
  B32,
  B64,
  F16,
  F16x2,
  BF16,
  F32,
  F64,
  Pred,
  B128
};
Type type_named(const std::string &suffix);
unsigned type_size(Type type);
bool is_float(Type type);
bool is_signed(Type type);

// What the instruction decoder asks of the function it decodes in.
class FunctionScope {
 public:
  virtual ~FunctionScope() = default;
  // The register an operand reads: a register, a special register, a literal (of `type`)
  // or a symbol's address (shared offset, frame offset, parameter offset, global address).
  // kNoRegister after setting `error` when it names nothing.
  virtual uint32_t source(const Operand &operand, Type type, std::string &error) = 0;
  // The register an operand writes (a register, or `_`: a scratch one).
  virtual uint32_t destination(const std::string &name, std::string &error) = 0;
  // An address operand: its base register (a symbol's address, or a zero) and offset, and
  // the space a symbol base puts it in (Generic where the base is a register).
  virtual bool address(const Operand &operand, uint32_t &base, int64_t &offset, Space &symbol_space,
                       std::string &error) = 0;
  // A label's instruction index, resolved once the function is read.
  virtual void branch_to(const std::string &label, uint32_t instruction) = 0;
  // A call: the callee's name and arguments; the scope fills the instruction's copies or
  // refuses it (`refusal`).
  virtual void call(Instruction &instruction, const std::vector<std::string> &results, const std::string &callee,
                    const std::vector<std::string> &arguments, std::string &refusal) = 0;
  virtual bool in_kernel() const = 0;
};

// Decodes one instruction statement into `out`. Returns false with `refusal` for an
// instruction the interpreter does not run, or with `error` for one that does not parse.
bool decode_instruction(const Statement &statement, FunctionScope &scope, uint32_t index, Instruction &out,
                        std::string &refusal, std::string &error);

}  // namespace leaseguard::sim::ptx
