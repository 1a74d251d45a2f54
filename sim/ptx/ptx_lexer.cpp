#include "ptx_lexer.h"

#include <cctype>

namespace leaseguard::sim::ptx {
namespace {

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%' || c == '.' || c == ':';
}

}  // namespace

std::vector<Token> tokenize(const std::string &text) {
  std::vector<Token> tokens;
  unsigned line = 1;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      i += 2;
      while (i < text.size() && text.compare(i, 2, "*/") != 0) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      i += 2;
    } else if (c == '"') {
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\') ++i;
        ++i;
      }
      ++i;
      tokens.push_back({"\"\"", line, false});
    } else if (word_char(c)) {
      size_t end = i;
      // A label's colon ends the word (`$L__BB0_2:`), a cache hint's `::` does not
      // (`.L2::cache_hint`).
      while (end < text.size() && word_char(text[end])) {
        if (text[end] == ':' && text.compare(end, 2, "::") != 0 && (end == 0 || text[end - 1] != ':')) break;
        ++end;
      }
      if (end == i) {  // a lone ':'
        tokens.push_back({":", line, true});
        ++i;
        continue;
      }
      tokens.push_back({text.substr(i, end - i), line, false});
      i = end;
    } else {
      tokens.push_back({std::string(1, c), line, true});
      ++i;
    }
  }
  return tokens;
}

}  // namespace leaseguard::sim::ptx
