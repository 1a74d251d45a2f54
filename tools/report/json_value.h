// A small JSON reader: parses a document into a tree of values. Used to read report files
// back (and by tests). Depth and size are bounded, so hostile input cannot exhaust memory
// or the stack.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace leaseguard::report {

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool as_bool() const { return boolean_; }
  double as_number() const { return number_; }
  const std::string &as_string() const;
  // An array's items (none for any other value).
  const std::vector<JsonValue> &items() const;

  // Member lookup; a null value if absent or not an object. A name given twice has the
  // value given last.
  const JsonValue &operator[](std::string_view key) const;
  const JsonValue &operator[](size_t index) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // An object's index-th member's name (look its value up by it); empty for any other value.
  std::string_view member_name(size_t index) const;
  size_t size() const { return children_ ? children_->values.size() : 0; }

  // Parses `text`. On error returns false with `error` = "line L column C: what", and `out`
  // null.
  static bool parse(std::string_view text, JsonValue &out, std::string &error);

 private:
  friend class JsonParser;
  // Each distinct string of a document (values and member names) is kept once, by its
  // root: a report repeats the same module paths, functions and names on every frame.
  using Strings = std::unordered_set<std::string>;  // nodes: a string stays where it is
  // An array's items, or an object's members: names and values in the order first read.
  // Behind one pointer, so that a number or a string (most of a report) carries no empty
  // containers: a report of 1e5 leaks read back took 864 MiB with a vector and a map in
  // every value and a string of its own in each.
  struct Children {
    std::vector<JsonValue> values;
    std::vector<const std::string *> names;  // objects only: names[i] is values[i]'s
    std::unique_ptr<Strings> strings;        // the document's root only
  };
  const JsonValue *find(std::string_view key) const;

  Type type_ = Type::Null;
  bool boolean_ = false;
  double number_ = 0;
  const std::string *string_ = nullptr;  // in the root's strings
  std::unique_ptr<Children> children_;
};

}  // namespace leaseguard::report
