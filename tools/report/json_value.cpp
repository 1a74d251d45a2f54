// Implementation of the JSON reader.
#include "json_value.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <unordered_map>

namespace leaseguard::report {

namespace {
const JsonValue kNull;
constexpr int kMaxDepth = 128;
}  // namespace

const std::string &JsonValue::as_string() const {
  static const std::string kNone;
  return string_ != nullptr ? *string_ : kNone;
}

const std::vector<JsonValue> &JsonValue::items() const {
  static const std::vector<JsonValue> kNone;
  return type_ == Type::Array && children_ ? children_->values : kNone;
}

// Objects in reports have a few dozen members at most: a scan beats a tree.
const JsonValue *JsonValue::find(std::string_view key) const {
  if (type_ != Type::Object || !children_) return nullptr;
  const std::vector<const std::string *> &names = children_->names;
  for (size_t i = 0; i < names.size(); ++i)
    if (*names[i] == key) return &children_->values[i];
  return nullptr;
}

const JsonValue &JsonValue::operator[](std::string_view key) const {
  const JsonValue *found = find(key);
  return found != nullptr ? *found : kNull;
}

std::string_view JsonValue::member_name(size_t index) const {
  if (type_ != Type::Object || !children_ || index >= children_->names.size()) return {};
  return *children_->names[index];
}

const JsonValue &JsonValue::operator[](size_t index) const {
  const std::vector<JsonValue> &values = items();
  return index < values.size() ? values[index] : kNull;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text), strings_(std::make_unique<JsonValue::Strings>()) {}

  bool document(JsonValue &out, std::string &error) {
    skip_space();
    if (!value(out, 0)) {
      error = where() + message_;
      return false;
    }
    skip_space();
    if (position_ != text_.size()) {
      error = where() + "unexpected text after the document";
      return false;
    }
    if (!out.children_) out.children_ = std::make_unique<JsonValue::Children>();
    out.children_->strings = std::move(strings_);
    return true;
  }

 private:
  std::string where() const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < position_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + " column " + std::to_string(column) + ": ";
  }

  bool fail(const char *what) {
    message_ = what;
    return false;
  }

  void skip_space() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                        text_[position_] == '\r' || text_[position_] == '\t'))
      ++position_;
  }

  bool literal(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return fail("invalid literal");
    position_ += word.size();
    return true;
  }

  bool value(JsonValue &out, int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    if (position_ >= text_.size()) return fail("unexpected end of input");
    char c = text_[position_];
    switch (c) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': out.type_ = JsonValue::Type::String; return interned(out.string_);
      case 't':
        out.type_ = JsonValue::Type::Bool;
        out.boolean_ = true;
        return literal("true");
      case 'f':
        out.type_ = JsonValue::Type::Bool;
        out.boolean_ = false;
        return literal("false");
      case 'n': out.type_ = JsonValue::Type::Null; return literal("null");
      default: return number(out);
    }
  }

  bool number(JsonValue &out) {
    size_t start = position_;
    if (position_ < text_.size() && text_[position_] == '-') ++position_;
    bool digits = false;
    while (position_ < text_.size() &&
           ((text_[position_] >= '0' && text_[position_] <= '9') || text_[position_] == '.' ||
            text_[position_] == 'e' || text_[position_] == 'E' || text_[position_] == '+' || text_[position_] == '-')) {
      digits = true;
      ++position_;
    }
    if (!digits) return fail("expected a value");
    std::string token(text_.substr(start, position_ - start));
    char *end = nullptr;
    out.number_ = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) return fail("invalid number");
    out.type_ = JsonValue::Type::Number;
    return true;
  }

  static void append_utf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  bool hex4(unsigned &code) {
    if (position_ + 4 > text_.size()) return fail("truncated \\u escape");
    auto [end, error] = std::from_chars(text_.data() + position_, text_.data() + position_ + 4, code, 16);
    if (error != std::errc() || end != text_.data() + position_ + 4) return fail("invalid \\u escape");
    position_ += 4;
    return true;
  }

  // A string of the document, kept once however often it appears.
  bool interned(const std::string *&out) {
    scratch_.clear();
    if (!string(scratch_)) return false;
    out = &*strings_->insert(scratch_).first;  // the one kept already, if any
    return true;
  }

  static bool is_plain_in_string(char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }

  bool string(std::string &out) {
    ++position_;  // opening quote
    while (position_ < text_.size()) {
      // Most strings hold no escape: one copy for each run up to the next quote, backslash or
      // control character.
      const size_t plain_from = position_;
      while (position_ < text_.size() && is_plain_in_string(text_[position_])) ++position_;
      out.append(text_, plain_from, position_ - plain_from);
      if (position_ == text_.size()) break;
      char c = text_[position_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (position_ >= text_.size()) break;
      char escape = text_[position_++];
      switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          unsigned code = 0;
          if (!hex4(code)) return false;
          if (code >= 0xD800 && code < 0xDC00 && text_.substr(position_, 2) == "\\u") {
            position_ += 2;
            unsigned low = 0;
            if (!hex4(low)) return false;
            if (low >= 0xDC00 && low < 0xE000) code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            else code = 0xFFFD;
          } else if (code >= 0xD800 && code < 0xE000) {
            code = 0xFFFD;
          }
          append_utf8(out, code);
          break;
        }
        default: return fail("invalid escape");
      }
    }
    return fail("unterminated string");
  }

  bool array(JsonValue &out, int depth) {
    out.type_ = JsonValue::Type::Array;
    ++position_;
    skip_space();
    if (position_ < text_.size() && text_[position_] == ']') {
      ++position_;
      return true;
    }
    out.children_ = std::make_unique<JsonValue::Children>();
    std::vector<JsonValue> &items = out.children_->values;
    while (true) {
      skip_space();
      items.emplace_back();
      if (!value(items.back(), depth + 1)) return false;
      skip_space();
      if (position_ >= text_.size()) return fail("unterminated array");
      if (text_[position_] == ',') {
        ++position_;
        continue;
      }
      if (text_[position_] == ']') {
        ++position_;
        items.shrink_to_fit();  // grown by doubling: up to half of it spare
        return true;
      }
      return fail("expected , or ] in array");
    }
  }

  bool object(JsonValue &out, int depth) {
    out.type_ = JsonValue::Type::Object;
    out.children_ = std::make_unique<JsonValue::Children>();
    std::vector<JsonValue> &values = out.children_->values;
    std::vector<const std::string *> &names = out.children_->names;
    // Where each name is, once the object is too large to scan for a name given twice (a
    // hostile document could otherwise make reading it quadratic). Names are interned: one
    // name, one pointer.
    std::unordered_map<const std::string *, size_t> index;
    constexpr size_t kScannedMembers = 32;
    ++position_;
    skip_space();
    if (position_ < text_.size() && text_[position_] == '}') {
      ++position_;
      return true;
    }
    while (true) {
      skip_space();
      if (position_ >= text_.size() || text_[position_] != '"') return fail("expected a member name");
      const std::string *key = nullptr;
      if (!interned(key)) return false;
      skip_space();
      if (position_ >= text_.size() || text_[position_] != ':') return fail("expected : after a member name");
      ++position_;
      skip_space();
      JsonValue member;
      if (!value(member, depth + 1)) return false;
      // A name given again replaces its value, in its first place.
      size_t at = names.size();
      if (names.size() < kScannedMembers) {
        at = static_cast<size_t>(std::find(names.begin(), names.end(), key) - names.begin());
      } else {
        if (index.empty())
          for (size_t i = 0; i < names.size(); ++i) index.emplace(names[i], i);
        at = index.emplace(key, names.size()).first->second;
      }
      if (at < names.size()) {
        values[at] = std::move(member);
      } else {
        names.push_back(key);
        values.push_back(std::move(member));
      }
      skip_space();
      if (position_ >= text_.size()) return fail("unterminated object");
      if (text_[position_] == ',') {
        ++position_;
        continue;
      }
      if (text_[position_] == '}') {
        ++position_;
        values.shrink_to_fit();
        names.shrink_to_fit();
        return true;
      }
      return fail("expected , or } in object");
    }
  }

  std::string_view text_;
  size_t position_ = 0;
  std::string message_;
  std::unique_ptr<JsonValue::Strings> strings_;
  std::string scratch_;  // the string being read, before it is interned
};

bool JsonValue::parse(std::string_view text, JsonValue &out, std::string &error) {
  out = JsonValue();
  JsonParser parser(text);
  if (parser.document(out, error)) return true;
  out = JsonValue();  // what was read points into the parser's strings, gone with it
  return false;
}

}  // namespace leaseguard::report
