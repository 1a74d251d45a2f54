// A small JSON reader: parses a document into a tree of values. Used to read report files
// back (and by tests). Depth and size are bounded, so hostile input cannot exhaust memory
// or the stack.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leaseguard::report {

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool as_bool() const { return boolean_; }
  double as_number() const { return number_; }
  const std::string &as_string() const { return string_; }
  const std::vector<JsonValue> &items() const { return array_; }
  const std::map<std::string, JsonValue> &members() const { return object_; }

  // Member lookup; a null value if absent or not an object.
  const JsonValue &operator[](const std::string &key) const;
  const JsonValue &operator[](size_t index) const;
  bool has(const std::string &key) const { return object_.count(key) != 0; }
  size_t size() const { return type_ == Type::Array ? array_.size() : object_.size(); }

  // Parses `text`. On error returns false with `error` = "line L column C: what".
  static bool parse(std::string_view text, JsonValue &out, std::string &error);

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::map<std::string, JsonValue> object_;
};

}  // namespace leaseguard::report
