// Implementation of the JSON writer.
#include "json_writer.h"

#include <cmath>
#include <cstdio>

namespace leaseguard::report {

namespace {
// Bytes that go into a JSON string as they are: printable ASCII but the quote and the backslash.
bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

// JSON's two-character escape of a byte, or nullptr where it has none.
const char *short_escape(unsigned char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return nullptr;
  }
}
}  // namespace

std::string JsonWriter::escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_escaped(out, text);
  return out;
}

void JsonWriter::append_escaped(std::string &out, std::string_view text) {
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    // Names, paths and functions are plain text almost always: one copy for each plain run.
    const size_t plain_from = i;
    while (i < text.size() && is_plain(static_cast<unsigned char>(text[i]))) ++i;
    out.append(text, plain_from, i - plain_from);
    if (i == text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (const char *escaped = short_escape(c)) {
      out += escaped;
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
      ++i;
      continue;
    }
    // Pass valid UTF-8 through; anything else (paths are bytes) becomes U+FFFD.
    size_t length = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool valid = length != 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out.push_back('"');
}

void JsonWriter::finish() {
  if (!sink_ || out_.empty()) return;
  sink_(out_);
  out_.clear();
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level &level = stack_.back();
  if (!level.empty) out_.push_back(',');
  level.empty = false;
  newline();
}

JsonWriter &JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  stack_.push_back({false, true});
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::end_object() {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_.push_back('}');
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  stack_.push_back({true, true});
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::end_array() {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_.push_back(']');
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::key(std::string_view name) {
  before_value();
  append_escaped(out_, name);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::value(std::string_view text) {
  before_value();
  append_escaped(out_, text);
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::value(int64_t number) {
  before_value();
  out_ += std::to_string(number);
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::value(uint64_t number) {
  before_value();
  out_ += std::to_string(number);
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::value(double number) {
  before_value();
  if (!std::isfinite(number)) {
    out_ += "null";
    hand_over_if_full();
    return *this;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", number);
  out_ += buffer;
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
  hand_over_if_full();
  return *this;
}

JsonWriter &JsonWriter::null() {
  before_value();
  out_ += "null";
  hand_over_if_full();
  return *this;
}

}  // namespace leaseguard::report
