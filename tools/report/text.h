// Immutable strings that copies share: module paths, build-ids, function and file names.
//
// A journal names a module once and its frames by number; a report's frames each carry the
// module's path and their function's and file's names. As std::string copies, a crafted
// journal of a megabyte (one 15 KB module path, eighty thousand distinct frames in it) took
// the reader to 1.2 GB. A Text is a pointer to one shared string; TextPool hands out one
// Text per distinct string, so a report's memory stays proportional to its input
// (docs/reliability.md, "Bad input").
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>

namespace leaseguard::report {

class Text {
 public:
  Text() = default;
  Text(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT: a string is a text
  Text(const char *text) : Text(std::string(text)) {}                                      // NOLINT

  const std::string &str() const noexcept { return text_ ? *text_ : empty_string(); }
  operator const std::string &() const noexcept { return str(); }  // NOLINT: read as the string it is
  operator std::string_view() const noexcept { return str(); }     // NOLINT

  bool empty() const noexcept { return str().empty(); }
  size_t size() const noexcept { return str().size(); }
  const char *c_str() const noexcept { return str().c_str(); }
  std::string substr(size_t position, size_t count = std::string::npos) const { return str().substr(position, count); }
  size_t find(std::string_view part, size_t from = 0) const noexcept { return str().find(part, from); }
  size_t rfind(char c, size_t from = std::string::npos) const noexcept { return str().rfind(c, from); }

  friend bool operator==(const Text &a, const Text &b) noexcept { return a.text_ == b.text_ || a.str() == b.str(); }
  friend bool operator!=(const Text &a, const Text &b) noexcept { return !(a == b); }
  friend bool operator==(const Text &a, const char *b) noexcept { return a.str() == b; }
  friend bool operator==(const Text &a, const std::string &b) noexcept { return a.str() == b; }
  friend bool operator<(const Text &a, const Text &b) noexcept { return a.text_ != b.text_ && a.str() < b.str(); }
  friend std::string operator+(const std::string &a, const Text &b) { return a + b.str(); }
  friend std::string operator+(const Text &a, const std::string &b) { return a.str() + b; }
  friend std::string operator+(const char *a, const Text &b) { return a + b.str(); }
  friend std::string operator+(const Text &a, const char *b) { return a.str() + b; }
  friend std::ostream &operator<<(std::ostream &out, const Text &text) { return out << text.str(); }

 private:
  static const std::string &empty_string() noexcept {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> text_;
};

// One Text per distinct string.
class TextPool {
 public:
  Text intern(std::string_view text) {
    auto found = texts_.find(text);
    if (found != texts_.end()) return found->second;
    Text made{std::string(text)};
    texts_.emplace(made.str(), made);  // the key views the Text's own, immutable string
    return made;
  }

 private:
  std::unordered_map<std::string_view, Text> texts_;
};

}  // namespace leaseguard::report
