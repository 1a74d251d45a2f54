// PTX text read into a Program (ptx_program.h): module variables, functions, registers,
// frames and calls; each instruction statement decoded by ptx_instructions.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "ptx_decode_internal.h"
#include "ptx_lexer.h"

namespace leaseguard::sim::ptx {
namespace {

// The most registers one `.reg .TYPE %name<N>` may declare: nvcc's largest kernels declare a
// few thousand; a count past this is damage.
constexpr unsigned long long kMostRegistersDeclared = 1 << 20;

}  // namespace

namespace {

uint32_t align_up(uint32_t value, uint32_t alignment) {
  return alignment == 0 ? value : (value + alignment - 1) / alignment * alignment;
}

// A place in a thread's frame: a function's own part, and where in it.
struct FrameRef {
  size_t function = 0;
  uint32_t offset = 0;
};

struct FunctionInfo {
  std::string name;
  bool entry = false;
  bool declared = false;              // its parameters are laid out
  bool defined = false;               // its body was read
  std::vector<Parameter> parameters;  // a kernel's (argument buffer) or a function's (frame)
  std::vector<Parameter> results;     // a function's return parameters (frame)
  uint32_t own_frame = 0;
  uint32_t base = 0;  // where its part of the frame starts
  std::set<size_t> callees;
  std::string refusal;
  uint32_t first = 0;
};

struct Symbol {
  enum Kind : uint8_t {
    Register,
    Frame,
    KernelParameter,
    SharedVariable,
    GlobalVariable,
    DynamicShared
  } kind = Register;
  uint32_t value = 0;  // register index, offset, or index in Program::globals
  FrameRef frame;
};

// One operand of a call's copies, to be laid out once every function's frame base is known.
struct PendingCopy {
  uint32_t instruction = 0;
  size_t copy = 0;
  FrameRef from, to;
};
struct PendingFill {
  size_t filled = 0;
  FrameRef at;
};

class Reader : public FunctionScope {
 public:
  explicit Reader(const std::string &text) : tokens_(tokenize(text)), program_(std::make_unique<Program>()) {}

  DecodeResult read();

  // FunctionScope
  uint32_t source(const Operand &operand, Type type, std::string &error) override;
  uint32_t destination(const std::string &name, std::string &error) override;
  bool address(const Operand &operand, uint32_t &base, int64_t &offset, Space &symbol_space,
               std::string &error) override;
  void branch_to(const std::string &label, uint32_t instruction) override {
    branches_.emplace_back(instruction, label);
  }
  void call(Instruction &instruction, const std::vector<std::string> &results, const std::string &callee,
            const std::vector<std::string> &arguments, std::string &refusal) override;
  bool in_kernel() const override { return functions_[current_].entry; }

 private:
  const Token &peek(size_t ahead = 0) const {
    static const Token kEnd{"", 0, true};
    return at_ + ahead < tokens_.size() ? tokens_[at_ + ahead] : kEnd;
  }
  bool done() const { return at_ >= tokens_.size(); }
  // The next token, taken (past the end: an empty one, so cut text reads as an error).
  const Token &take() {
    const Token &t = peek();
    if (!done()) ++at_;
    return t;
  }
  bool accept(const char *text) {
    if (!done() && tokens_[at_].text == text) {
      ++at_;
      return true;
    }
    return false;
  }
  void skip_line() {
    const unsigned line = peek().line;
    while (!done() && tokens_[at_].line == line) ++at_;
  }
  void skip_statement() {
    int depth = 0;
    while (!done()) {
      const std::string &t = tokens_[at_++].text;
      if (t == "{") ++depth;
      if (t == "}") --depth;
      if (t == ";" && depth <= 0) return;
    }
  }
  void skip_braces() {
    while (!done() && peek().text != "{") ++at_;
    int depth = 0;
    while (!done()) {
      const std::string &t = tokens_[at_++].text;
      if (t == "{") ++depth;
      if (t == "}" && --depth == 0) return;
    }
  }
  bool fail(const std::string &why) {
    if (error_.empty()) error_ = "line " + std::to_string(peek().line) + ": " + why;
    return false;
  }

  bool read_module_statement();
  bool read_variable(bool module_scope);
  bool read_register_range(std::vector<std::pair<std::string, uint32_t>> &names);
  bool read_function(bool entry);
  bool read_parameter_list(std::vector<Parameter> &out);
  bool read_body();
  bool read_statement();
  bool read_instruction();
  std::vector<Operand> read_operands(bool &ok);
  bool read_operand(size_t begin, size_t end, Operand &out);
  void finish();
  void resolve_calls();
  void make_kernels();

  uint32_t constant(uint64_t bits);
  uint32_t filled(Fill fill, uint64_t value = 0, const std::string &symbol = {});
  uint32_t new_register() { return program_->registers++; }
  const Symbol *lookup(const std::string &name) const;
  uint32_t symbol_register(const Symbol &symbol);
  size_t function_named(const std::string &name);

  std::vector<Token> tokens_;
  size_t at_ = 0;
  std::unique_ptr<Program> program_;
  std::string error_;
  std::vector<FunctionInfo> functions_;
  std::map<std::string, size_t> function_index_;
  size_t current_ = 0;
  std::map<std::string, Symbol> module_symbols_;
  std::vector<std::map<std::string, Symbol>> scopes_;
  std::map<std::string, uint32_t> labels_;
  std::vector<std::pair<uint32_t, std::string>> branches_;
  std::map<uint64_t, uint32_t> constants_;
  std::map<std::pair<Fill, std::string>, uint32_t> fills_;
  std::vector<PendingCopy> pending_copies_;
  std::vector<PendingFill> pending_fills_;
  uint32_t shared_size_ = 0;
  uint32_t dynamic_alignment_ = 16;
  uint32_t sink_ = kNoRegister;
};

uint32_t Reader::constant(uint64_t bits) {
  const auto found = constants_.find(bits);
  if (found != constants_.end()) return found->second;
  const uint32_t r = new_register();
  program_->filled.push_back({r, Fill::Constant, bits, {}});
  constants_[bits] = r;
  return r;
}

uint32_t Reader::filled(Fill fill, uint64_t value, const std::string &symbol) {
  const auto key = std::make_pair(fill, symbol);
  const auto found = fills_.find(key);
  if (found != fills_.end()) return found->second;
  const uint32_t r = new_register();
  program_->filled.push_back({r, fill, value, symbol});
  fills_[key] = r;
  return r;
}

const Symbol *Reader::lookup(const std::string &name) const {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    const auto found = scope->find(name);
    if (found != scope->end()) return &found->second;
  }
  const auto found = module_symbols_.find(name);
  return found == module_symbols_.end() ? nullptr : &found->second;
}

uint32_t Reader::symbol_register(const Symbol &symbol) {
  switch (symbol.kind) {
    case Symbol::Register: return symbol.value;
    case Symbol::KernelParameter:
    case Symbol::SharedVariable: return constant(symbol.value);
    case Symbol::DynamicShared: return filled(Fill::DynamicSharedOffset);
    case Symbol::GlobalVariable: return filled(Fill::GlobalSymbol, symbol.value, program_->globals[symbol.value]);
    case Symbol::Frame: {
      // Laid out at the end; one register per place, filled with the frame offset then.
      const uint32_t r = new_register();
      program_->filled.push_back({r, Fill::Constant, 0, {}});
      pending_fills_.push_back({program_->filled.size() - 1, symbol.frame});
      return r;
    }
  }
  return kNoRegister;
}

// The special registers, by name.
bool special_register(const std::string &name, Fill &fill) {
  static const struct {
    const char *name;
    Fill fill;
  } kSpecial[] = {{"%tid.x", Fill::TidX},
                  {"%tid.y", Fill::TidY},
                  {"%tid.z", Fill::TidZ},
                  {"%ntid.x", Fill::NtidX},
                  {"%ntid.y", Fill::NtidY},
                  {"%ntid.z", Fill::NtidZ},
                  {"%ctaid.x", Fill::CtaidX},
                  {"%ctaid.y", Fill::CtaidY},
                  {"%ctaid.z", Fill::CtaidZ},
                  {"%nctaid.x", Fill::NctaidX},
                  {"%nctaid.y", Fill::NctaidY},
                  {"%nctaid.z", Fill::NctaidZ},
                  {"%laneid", Fill::LaneId},
                  {"%warpid", Fill::WarpId},
                  {"%nwarpid", Fill::NWarpId},
                  {"%smid", Fill::SmId},
                  {"%nsmid", Fill::NSmId},
                  {"%gridid", Fill::GridId},
                  {"%lanemask_eq", Fill::LanemaskEq},
                  {"%lanemask_lt", Fill::LanemaskLt},
                  {"%lanemask_le", Fill::LanemaskLe},
                  {"%lanemask_gt", Fill::LanemaskGt},
                  {"%lanemask_ge", Fill::LanemaskGe},
                  {"%dynamic_smem_size", Fill::DynamicSharedSize},
                  {"%total_smem_size", Fill::TotalSharedSize}};
  for (const auto &s : kSpecial)
    if (name == s.name) {
      fill = s.fill;
      return true;
    }
  return false;
}

// A literal's bits as an operand of `type`: integers as written (two's complement), floats
// from PTX's exact hex forms or decimal.
bool literal_bits(const std::string &text, Type type, uint64_t &bits) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'f' || text[1] == 'F')) {
    const uint32_t f = static_cast<uint32_t>(std::strtoull(text.c_str() + 2, nullptr, 16));
    if (type == Type::F64) {
      float value;
      std::memcpy(&value, &f, sizeof value);
      const double widened = value;
      std::memcpy(&bits, &widened, sizeof bits);
    } else {
      bits = f;
    }
    return true;
  }
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'd' || text[1] == 'D')) {
    bits = std::strtoull(text.c_str() + 2, nullptr, 16);
    if (type == Type::F32) {
      double value;
      std::memcpy(&value, &bits, sizeof value);
      const float narrowed = static_cast<float>(value);
      uint32_t f;
      std::memcpy(&f, &narrowed, sizeof f);
      bits = f;
    }
    return true;
  }
  const bool decimal_float = text.find_first_of(".eE") != std::string::npos && text.find("0x") == std::string::npos;
  if (is_float(type) || decimal_float) {
    const double value = std::strtod(text.c_str(), nullptr);
    if (type == Type::F32 || !is_float(type)) {
      const float narrowed = static_cast<float>(value);
      uint32_t f;
      std::memcpy(&f, &narrowed, sizeof f);
      bits = f;
    } else {
      std::memcpy(&bits, &value, sizeof bits);
    }
    return true;
  }
  char *end = nullptr;
  const bool negative = !text.empty() && text[0] == '-';
  const uint64_t magnitude = std::strtoull(text.c_str() + (negative ? 1 : 0), &end, 0);
  bits = negative ? 0 - magnitude : magnitude;
  return end != nullptr && (*end == '\0' || *end == 'U' || *end == 'u');
}

uint32_t Reader::source(const Operand &operand, Type type, std::string &error) {
  if (operand.kind == Operand::Literal) {
    uint64_t bits = 0;
    if (!literal_bits(operand.text, type, bits)) {
      error = "bad literal " + operand.text;
      return kNoRegister;
    }
    return constant(bits);
  }
  if (operand.kind == Operand::Sink) return destination("_", error);
  if (operand.kind != Operand::Name) {
    error = "unexpected operand";
    return kNoRegister;
  }
  if (const Symbol *symbol = lookup(operand.text); symbol != nullptr) return symbol_register(*symbol);
  Fill fill;
  if (special_register(operand.text, fill)) return filled(fill);
  if (operand.text == "WARP_SZ") return constant(kWarpSize);  // PTX's one predefined constant
  if (function_index_.count(operand.text) != 0) {
    error = "the address of function " + operand.text;
    return kNoRegister;
  }
  error = "unknown name " + operand.text;
  return kNoRegister;
}

uint32_t Reader::destination(const std::string &name, std::string &error) {
  if (name == "_") {
    if (sink_ == kNoRegister) sink_ = new_register();
    return sink_;
  }
  const Symbol *symbol = lookup(name);
  if (symbol == nullptr || symbol->kind != Symbol::Register) {
    error = "not a register: " + name;
    return kNoRegister;
  }
  return symbol->value;
}

bool Reader::address(const Operand &operand, uint32_t &base, int64_t &offset, Space &symbol_space, std::string &error) {
  offset = operand.offset;
  symbol_space = Space::Generic;
  if (operand.text.empty()) {
    base = constant(0);
    return true;
  }
  const Symbol *symbol = lookup(operand.text);
  if (symbol == nullptr) {
    error = "unknown name " + operand.text;
    return false;
  }
  switch (symbol->kind) {
    case Symbol::Register: break;
    case Symbol::Frame: symbol_space = Space::Local; break;
    case Symbol::KernelParameter: symbol_space = Space::Param; break;
    case Symbol::SharedVariable:
    case Symbol::DynamicShared: symbol_space = Space::Shared; break;
    case Symbol::GlobalVariable: symbol_space = Space::Global; break;
  }
  base = symbol_register(*symbol);
  return base != kNoRegister;
}

size_t Reader::function_named(const std::string &name) {
  const auto found = function_index_.find(name);
  if (found != function_index_.end()) return found->second;
  functions_.emplace_back();
  functions_.back().name = name;
  function_index_[name] = functions_.size() - 1;
  return functions_.size() - 1;
}

void Reader::call(Instruction &instruction, const std::vector<std::string> &results, const std::string &callee,
                  const std::vector<std::string> &arguments, std::string &refusal) {
  const auto frame_of = [&](const std::string &name, FrameRef &at) {
    const Symbol *symbol = lookup(name);
    if (symbol == nullptr || symbol->kind != Symbol::Frame) return false;
    at = symbol->frame;
    return true;
  };
  const uint32_t index = static_cast<uint32_t>(program_->code.size());
  if (callee == "vprintf" || callee == "__assertfail") {
    // The arguments' places: [0] from the first, to the second; [1] from the third (or the
    // result), to the fourth.
    std::vector<FrameRef> places;
    for (const std::string &name : arguments) {
      FrameRef at;
      if (!frame_of(name, at)) {
        refusal = callee + " with an argument that is not a parameter";
        return;
      }
      places.push_back(at);
    }
    if (callee == "vprintf") {
      if (places.size() != 2) {
        refusal = "vprintf with " + std::to_string(places.size()) + " arguments";
        return;
      }
      FrameRef result = places[0];
      if (!results.empty() && !frame_of(results[0], result)) {
        refusal = "vprintf's result";
        return;
      }
      places.push_back(result);
      places.push_back(result);
      instruction.control = Control::Printf;
      instruction.mode = results.empty() ? 0 : 1;
    } else {
      while (places.size() < 4) places.push_back(places.empty() ? FrameRef{} : places.back());
      instruction.control = Control::Trap;
      instruction.mode = 1;  // an assertion
    }
    instruction.copies.resize(2);
    pending_copies_.push_back({index, 0, places[0], places[1]});
    pending_copies_.push_back({index, 1, places[2], places[3]});
    return;
  }
  const size_t target = function_named(callee);
  FunctionInfo &caller = functions_[current_];
  const FunctionInfo &called = functions_[target];
  if (!called.declared) {
    refusal = "a call of " + callee + ", which the module does not declare first";
    return;
  }
  caller.callees.insert(target);
  instruction.control = Control::Call;
  if (arguments.size() != called.parameters.size() || results.size() > called.results.size()) {
    refusal = "a call of " + callee + " with the wrong number of arguments";
    return;
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    FrameRef from;
    if (!frame_of(arguments[i], from)) {
      refusal = "a call of " + callee + " whose argument is not a parameter";
      return;
    }
    instruction.copies.push_back({0, 0, called.parameters[i].size});
    pending_copies_.push_back({index, instruction.copies.size() - 1, from, {target, called.parameters[i].offset}});
  }
  instruction.frame_end = static_cast<uint32_t>(instruction.copies.size());
  for (size_t i = 0; i < results.size(); ++i) {
    FrameRef to;
    if (!frame_of(results[i], to)) {
      refusal = "a call of " + callee + " whose result is not a parameter";
      return;
    }
    instruction.copies.push_back({0, 0, called.results[i].size});
    pending_copies_.push_back({index, instruction.copies.size() - 1, {target, called.results[i].offset}, to});
  }
  // The callee's first instruction is known once its body is read: kept by name.
  instruction.target = static_cast<uint32_t>(target);
}

// `.param [.ptr .space] [.align N] .TYPE NAME[[N]]`, comma-separated, inside parentheses.
bool Reader::read_parameter_list(std::vector<Parameter> &out) {
  if (!accept("(")) return fail("expected (");
  while (!done() && peek().text != ")") {
    Parameter parameter;
    uint32_t element = 0, count = 1, alignment = 0;
    while (!done() && peek().text != "," && peek().text != ")") {
      const Token &t = tokens_[at_++];
      if (t.text == ".align") {
        alignment = static_cast<uint32_t>(std::strtoul(peek().text.c_str(), nullptr, 0));
        ++at_;
      } else if (t.text == "[") {
        count = static_cast<uint32_t>(std::strtoul(peek().text.c_str(), nullptr, 0));
        while (!done() && peek().text != "]") ++at_;
        ++at_;
      } else if (!t.punctuation && t.text[0] == '.') {
        const Type type = type_named(t.text.substr(1));
        if (type != Type::None) element = type_size(type);
      } else if (!t.punctuation) {
        parameter.name = t.text;
      }
    }
    accept(",");
    parameter.size = element * count;
    parameter.alignment = alignment != 0 ? alignment : std::max<uint32_t>(element, 1);
    out.push_back(parameter);
  }
  return accept(")") || fail("expected )");
}

bool Reader::read_function(bool entry) {
  std::vector<Parameter> results;
  if (!entry && peek().text == "(") {
    if (!read_parameter_list(results)) return false;
  }
  const std::string name = take().text;
  if (name.empty()) return fail("a function without a name");
  std::vector<Parameter> parameters;
  if (peek().text == "(" && !read_parameter_list(parameters)) return false;
  current_ = function_named(name);
  FunctionInfo &function = functions_[current_];
  function.entry = entry;
  if (!function.declared) {
    function.declared = true;
    function.parameters = parameters;
    function.results = results;
    uint32_t offset = 0;
    for (Parameter &p : function.parameters) {
      offset = align_up(offset, p.alignment);
      p.offset = offset;
      offset += p.size;
    }
    if (entry) {
      function.own_frame = 0;
    } else {
      for (Parameter &p : function.results) {
        offset = align_up(offset, p.alignment);
        p.offset = offset;
        offset += p.size;
      }
      function.own_frame = offset;
    }
  }
  // Performance directives (.maxntid, .reqntid, .noreturn, ...) up to the body or the end.
  while (!done() && peek().text != "{" && peek().text != ";") ++at_;
  if (accept(";")) return true;  // a declaration
  if (function.defined) return fail("function " + name + " defined twice");
  function.defined = true;
  function.first = static_cast<uint32_t>(program_->code.size());
  scopes_.clear();
  scopes_.emplace_back();
  labels_.clear();
  branches_.clear();
  for (const Parameter &p : function.parameters) {
    Symbol symbol;
    if (entry) {
      symbol.kind = Symbol::KernelParameter;
      symbol.value = p.offset;
    } else {
      symbol.kind = Symbol::Frame;
      symbol.frame = {current_, p.offset};
    }
    scopes_.back()[p.name] = symbol;
  }
  for (const Parameter &p : function.results) {
    Symbol symbol;
    symbol.kind = Symbol::Frame;
    symbol.frame = {current_, p.offset};
    scopes_.back()[p.name] = symbol;
  }
  if (!read_body()) return false;
  for (const auto &[instruction, label] : branches_) {
    const auto found = labels_.find(label);
    if (found == labels_.end()) return fail("no label " + label + " in " + name);
    program_->code[instruction].target = found->second;
  }
  // A kernel's or function's last statement may fall off its end: it returns.
  Instruction end;
  end.control = function.entry ? Control::Exit : Control::Return;
  end.run = [](Warp &, const Instruction &, uint32_t) {};
  end.text = "(end of " + name + ")";
  program_->code.push_back(end);
  return true;
}

// `%r<6>` (after the `<`): registers %r0 .. %r5 in place of the stem `%r`, the last name. A
// count past what any kernel declares is refused, not taken for names to make (a fuzzed
// `%rd<888...82>` asked for four billion).
bool Reader::read_register_range(std::vector<std::pair<std::string, uint32_t>> &names) {
  const unsigned long long count = std::strtoull(peek().text.c_str(), nullptr, 0);
  if (count > kMostRegistersDeclared)
    return fail("more than " + std::to_string(kMostRegistersDeclared) + " registers declared at once: " + peek().text);
  ++at_;
  accept(">");
  const std::string stem = names.back().first;
  names.pop_back();
  for (unsigned long long i = 0; i < count; ++i) names.emplace_back(stem + std::to_string(i), 1);
  return true;
}

// A variable: `[.align N] .TYPE NAME[[N]]... [= ...];` in a space: `.reg`, `.local`,
// `.shared`, `.param` (in a function), `.global`, `.const`, `.shared` (module).
bool Reader::read_variable(bool module_scope) {
  const std::string space = take().text;
  uint32_t alignment = 0, element = 0;
  bool is_extern = false;
  std::vector<std::pair<std::string, uint32_t>> names;  // name, elements (0: unsized)
  bool unsized = false;
  while (!done() && peek().text != ";") {
    const Token &t = tokens_[at_];
    if (t.text == "=") {
      skip_statement();
      --at_;
      break;
    }
    ++at_;
    if (t.text == ".align") {
      alignment = static_cast<uint32_t>(std::strtoul(peek().text.c_str(), nullptr, 0));
      ++at_;
    } else if (t.text == ".extern") {
      is_extern = true;
    } else if (!t.punctuation && t.text[0] == '.') {
      const Type type = type_named(t.text.substr(1));
      if (type != Type::None) element = type_size(type);
      if (t.text.rfind(".v", 0) == 0) element = 0;  // vectors: sized by their type after
    } else if (t.text == "<" && !names.empty()) {
      if (!read_register_range(names)) return false;
    } else if (t.text == "[") {
      if (peek().text == "]") {
        unsized = true;
        if (!names.empty()) names.back().second = 0;
      } else if (!names.empty()) {
        names.back().second *= static_cast<uint32_t>(std::strtoul(peek().text.c_str(), nullptr, 0));
        ++at_;
      }
      while (!done() && peek().text != "]") ++at_;
      ++at_;
    } else if (!t.punctuation) {
      names.emplace_back(t.text, 1);
    }
  }
  accept(";");
  if (alignment == 0) alignment = std::max<uint32_t>(element, 1);
  for (const auto &[name, count] : names) {
    Symbol symbol;
    const uint32_t bytes = element * count;
    if (space == ".reg") {
      symbol.kind = Symbol::Register;
      symbol.value = new_register();
    } else if (space == ".shared") {
      if (unsized || count == 0 || is_extern) {
        symbol.kind = Symbol::DynamicShared;
        dynamic_alignment_ = std::max(dynamic_alignment_, alignment);
      } else {
        shared_size_ = align_up(shared_size_, alignment);
        symbol.kind = Symbol::SharedVariable;
        symbol.value = shared_size_;
        shared_size_ += bytes;
      }
    } else if (space == ".local" || space == ".param") {
      if (module_scope) continue;
      FunctionInfo &function = functions_[current_];
      function.own_frame = align_up(function.own_frame, alignment);
      symbol.kind = Symbol::Frame;
      symbol.frame = {current_, function.own_frame};
      function.own_frame += std::max<uint32_t>(bytes, 1);
    } else {  // .global, .const
      symbol.kind = Symbol::GlobalVariable;
      symbol.value = static_cast<uint32_t>(program_->globals.size());
      program_->globals.push_back(name);
    }
    if (module_scope) module_symbols_[name] = symbol;
    else scopes_.back()[name] = symbol;
  }
  return true;
}

bool Reader::read_operand(size_t begin, size_t end, Operand &out) {
  if (begin >= end) return fail("empty operand");
  const std::string &first = tokens_[begin].text;
  if (first == "[") {
    out.kind = Operand::Address;
    int sign = 1;
    for (size_t i = begin + 1; i < end && tokens_[i].text != "]"; ++i) {
      const std::string &t = tokens_[i].text;
      if (t == "+") continue;
      if (t == "-") {
        sign = -sign;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(t[0])) != 0) {
        out.offset += sign * static_cast<int64_t>(std::strtoull(t.c_str(), nullptr, 0));
        sign = 1;
      } else {
        out.text = t;
      }
    }
    return true;
  }
  if (first == "{" || first == "(") {
    out.kind = Operand::Vector;
    size_t start = begin + 1;
    for (size_t i = begin + 1; i < end; ++i) {
      const std::string &t = tokens_[i].text;
      if (t == "," || t == "}" || t == ")") {
        if (i > start) {
          Operand element;
          if (!read_operand(start, i, element)) return false;
          out.elements.push_back(element);
        }
        start = i + 1;
      }
    }
    return true;
  }
  if (first == "!") {
    if (!read_operand(begin + 1, end, out)) return false;
    out.negated = true;
    return true;
  }
  if (first == "-") {
    if (begin + 1 >= end) return fail("a lone -");
    out.kind = Operand::Literal;
    out.text = "-" + tokens_[begin + 1].text;
    return true;
  }
  out.text = first;
  if (first == "_") out.kind = Operand::Sink;
  else if (std::isdigit(static_cast<unsigned char>(first[0])) != 0) out.kind = Operand::Literal;
  else out.kind = Operand::Name;
  if (begin + 2 < end + 1 && begin + 1 < end && tokens_[begin + 1].text == "|" && begin + 2 < end)
    out.second = tokens_[begin + 2].text;
  return true;
}

std::vector<Operand> Reader::read_operands(bool &ok) {
  std::vector<Operand> operands;
  size_t start = at_;
  int depth = 0;
  while (!done()) {
    const std::string &t = tokens_[at_].text;
    if (t == "[" || t == "{" || t == "(") ++depth;
    if (t == "]" || t == "}" || t == ")") --depth;
    if ((t == "," && depth == 0) || (t == ";" && depth <= 0)) {
      if (at_ > start) {
        Operand operand;
        if (!read_operand(start, at_, operand)) {
          ok = false;
          return operands;
        }
        operands.push_back(operand);
      }
      if (t == ";") {
        ++at_;
        return operands;
      }
      start = at_ + 1;
    }
    ++at_;
  }
  ok = fail("statement without ;");
  return operands;
}

bool Reader::read_instruction() {
  Statement statement;
  statement.line = peek().line;
  const size_t first = at_;
  if (accept("@")) {
    if (accept("!")) statement.guard_negated = true;
    statement.guard = take().text;
  }
  const std::string opcode = take().text;
  if (opcode.empty()) return fail("a statement without an instruction");
  size_t dot = 0, from = 0;
  while ((dot = opcode.find('.', from)) != std::string::npos) {
    statement.opcode.push_back(opcode.substr(from, dot - from));
    from = dot + 1;
  }
  statement.opcode.push_back(opcode.substr(from));
  bool ok = true;
  statement.operands = read_operands(ok);
  if (!ok) return false;
  for (size_t i = first; i < at_ && i < first + 24; ++i) {
    if (!statement.text.empty() && !tokens_[i].punctuation && !tokens_[i - 1].punctuation) statement.text += ' ';
    statement.text += tokens_[i].text;
  }
  Instruction instruction;
  std::string refusal, error;
  const uint32_t index = static_cast<uint32_t>(program_->code.size());
  if (!decode_instruction(statement, *this, index, instruction, refusal, error) || !error.empty()) {
    if (!error.empty()) {
      // A statement the decoder cannot read refuses its kernel too, naming it: a module is
      // loaded whatever its kernels hold, as a driver loads one it compiled.
      refusal = statement.text + " (" + error + ")";
    } else {
      refusal = refusal + " (" + statement.text + ", line " + std::to_string(statement.line) + ")";
    }
    FunctionInfo &function = functions_[current_];
    if (function.refusal.empty()) function.refusal = refusal;
    // A call refused half way may have left places to lay out for copies it no longer has.
    pending_copies_.erase(std::remove_if(pending_copies_.begin(), pending_copies_.end(),
                                         [&](const PendingCopy &copy) { return copy.instruction == index; }),
                          pending_copies_.end());
    instruction = Instruction{};
    instruction.control = Control::Trap;
    instruction.run = [](Warp &, const Instruction &, uint32_t) {};
    instruction.text = statement.text;
  }
  program_->code.push_back(instruction);
  return true;
}

bool Reader::read_statement() {
  const Token &t = peek();
  if (t.text == "{") {
    ++at_;
    scopes_.emplace_back();
    return true;
  }
  if (t.text == ".reg" || t.text == ".local" || t.text == ".shared" || t.text == ".param") return read_variable(false);
  if (t.text == ".pragma" || t.text == ".maxnreg") {
    skip_statement();
    return true;
  }
  if (t.text == ".loc" || t.text == ".file") {
    skip_line();
    return true;
  }
  if (!t.punctuation && peek(1).text == ":") {
    if (peek(2).text == ".callprototype") {
      skip_statement();
      return true;
    }
    labels_[t.text] = static_cast<uint32_t>(program_->code.size());
    at_ += 2;
    return true;
  }
  return read_instruction();
}

bool Reader::read_body() {
  if (!accept("{")) return fail("expected {");
  while (!done()) {
    if (peek().text == "}") {
      ++at_;
      if (scopes_.size() == 1) return true;
      scopes_.pop_back();
      continue;
    }
    if (!read_statement()) return false;
  }
  return fail("function without its closing }");
}

bool Reader::read_module_statement() {
  const std::string &t = peek().text;
  if (t == ".version" || t == ".target" || t == ".address_size" || t == ".file" || t == ".loc") {
    skip_line();
    return true;
  }
  if (t == ".section") {
    skip_braces();
    return true;
  }
  if (t == ".visible" || t == ".extern" || t == ".weak" || t == ".common") {
    if (t == ".extern" && peek(1).text == ".shared") {
      ++at_;
      --at_;
      const size_t where = at_;
      ++at_;  // past .extern: the variable is dynamic shared memory
      (void)where;
      return read_variable(true);
    }
    ++at_;
    return true;
  }
  if (t == ".entry" || t == ".func") {
    ++at_;
    return read_function(t == ".entry");
  }
  if (t == ".global" || t == ".const" || t == ".shared") return read_variable(true);
  if (t == ".alias" || t == ".pragma") {
    skip_statement();
    return true;
  }
  return fail("unexpected " + t);
}

void Reader::finish() {
  // Each function's part of the frame starts past every caller's: no two functions that are
  // active at once share a place (recursion is refused, so there is such a layout).
  std::vector<std::vector<size_t>> callers(functions_.size());
  for (size_t f = 0; f < functions_.size(); ++f)
    for (size_t callee : functions_[f].callees) callers[callee].push_back(f);
  // A call graph with a cycle: its functions refuse (and so do the kernels reaching them).
  std::vector<int> state(functions_.size(), 0);
  std::vector<size_t> order;
  std::function<bool(size_t)> visit = [&](size_t f) {
    if (state[f] == 1) return false;
    if (state[f] == 2) return true;
    state[f] = 1;
    for (size_t callee : functions_[f].callees)
      if (!visit(callee)) {
        if (functions_[f].refusal.empty()) functions_[f].refusal = "recursion (" + functions_[f].name + ")";
        state[f] = 2;
        order.push_back(f);
        return false;
      }
    state[f] = 2;
    order.push_back(f);
    return true;
  };
  for (size_t f = 0; f < functions_.size(); ++f) visit(f);
  std::reverse(order.begin(), order.end());  // callers before callees
  for (size_t f : order) {
    if (functions_[f].refusal.rfind("recursion", 0) == 0) continue;
    for (size_t callee : functions_[f].callees)
      functions_[callee].base =
          std::max(functions_[callee].base, align_up(functions_[f].base + functions_[f].own_frame, 16));
  }
  for (const PendingFill &fill : pending_fills_)
    program_->filled[fill.filled].value = functions_[fill.at.function].base + fill.at.offset;
  for (const PendingCopy &copy : pending_copies_) {
    FrameCopy &c = program_->code[copy.instruction].copies[copy.copy];
    c.from = functions_[copy.from.function].base + copy.from.offset;
    c.to = functions_[copy.to.function].base + copy.to.offset;
  }
  resolve_calls();
  make_kernels();
}

// Calls go to the callee's first instruction; a callee without a body refuses its callers.
void Reader::resolve_calls() {
  for (Instruction &instruction : program_->code)
    if (instruction.control == Control::Call) {
      const FunctionInfo &callee = functions_[instruction.target];
      instruction.target = callee.first;
    }
  for (FunctionInfo &function : functions_)
    for (size_t callee : function.callees)
      if (!functions_[callee].defined && function.refusal.empty()) {
        const std::string &name = functions_[callee].name;
        std::string what = "a call of " + name + ", which is not in the module";
        if (name == "malloc" || name == "free") what = "device-side " + name;
        if (name.rfind("cudaLaunchDevice", 0) == 0 || name.rfind("cudaGetParameterBuffer", 0) == 0)
          what = "dynamic parallelism (" + name + ")";
        if (name.rfind("cudaCG", 0) == 0) what = "cooperative groups' grid synchronization (" + name + ")";
        function.refusal = what;
      }
}

// Kernels: their frame is the deepest of the functions they reach; a refusal anywhere they
// reach is theirs.
void Reader::make_kernels() {
  for (const FunctionInfo &function : functions_) {
    if (!function.entry || !function.defined) continue;
    Kernel kernel;
    kernel.name = function.name;
    kernel.entry = function.first;
    kernel.parameters = function.parameters;
    for (const Parameter &p : kernel.parameters)
      kernel.arguments_size = std::max(kernel.arguments_size, p.offset + p.size);
    kernel.static_shared = shared_size_;
    kernel.dynamic_shared_alignment = dynamic_alignment_;
    std::set<size_t> seen;
    std::vector<size_t> stack{function_index_.at(function.name)};
    uint32_t frame = 0;
    while (!stack.empty()) {
      const size_t f = stack.back();
      stack.pop_back();
      if (!seen.insert(f).second) continue;
      frame = std::max(frame, functions_[f].base + functions_[f].own_frame);
      if (kernel.refusal.empty() && !functions_[f].refusal.empty()) kernel.refusal = functions_[f].refusal;
      for (size_t callee : functions_[f].callees) stack.push_back(callee);
    }
    kernel.frame_size = align_up(frame, 16);
    program_->kernels[kernel.name] = kernel;
  }
}

DecodeResult Reader::read() {
  DecodeResult result;
  while (!done()) {
    if (!read_module_statement()) break;
  }
  if (!error_.empty()) {
    result.error = error_;
    return result;
  }
  finish();
  result.program = std::move(program_);
  return result;
}

}  // namespace

DecodeResult decode(const std::string &text) {
  Reader reader(text);
  return reader.read();
}

}  // namespace leaseguard::sim::ptx
