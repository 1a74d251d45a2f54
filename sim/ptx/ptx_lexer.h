// PTX text as tokens: words (directives, opcodes, registers, names, numbers) and single
// punctuation characters, each with its line. Comments and quoted strings are dropped.
#pragma once

#include <string>
#include <vector>

namespace leaseguard::sim::ptx {

struct Token {
  std::string text;
  unsigned line = 0;
  bool punctuation = false;
};

std::vector<Token> tokenize(const std::string &text);

}  // namespace leaseguard::sim::ptx
