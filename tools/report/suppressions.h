// Leak suppressions, in LeakSanitizer's `leak:` syntax with two extensions.
//
//   # a comment
//   leak:libthirdparty.so            substring of a frame's module, function or file
//   leak:^cache_init$                ^ and $ anchor; * matches any run of characters
//   leak:pool_* api=cu*Async*       only leaks from matching entry points
//   leak:warmup min_bytes=1M         only leaks of at least this size (K, M, G suffixes)
//
// A leak is suppressed when one of its frames matches a line's pattern (module path,
// demangled function, or source file) and the leak meets the line's qualifiers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report_model.h"

namespace leaseguard::report {

// `pattern` against all of `text`, `*` matching any run of characters.
// A byte count, with an optional K, M or G suffix (powers of 1024): what min_bytes= in a
// suppression file and --min-bytes accept.
std::optional<uint64_t> parse_byte_size(std::string_view text);

bool wildcard_matches(std::string_view pattern, std::string_view text);

// `pattern` against `text`, LeakSanitizer's way: substring unless anchored, `*` wildcard.
bool suppression_pattern_matches(std::string_view pattern, std::string_view text);

struct Suppression {
  std::string pattern;
  std::string api_pattern;  // empty: any entry point
  uint64_t min_bytes = 0;
  std::string source;  // "file:line", for messages
  uint64_t hit_allocations = 0;
  uint64_t hit_bytes = 0;
};

class Suppressions {
 public:
  // Parses suppression text; on error returns false with "name:line: what" in `error`.
  bool parse(std::string_view text, const std::string &name, std::string &error);
  bool load(const std::string &path, std::string &error);

  // Removes suppressed leaks from `report`, counting them in report.suppressed_allocations
  // and in each suppression's hits. Stacks must be symbolized first.
  void apply(Report &report);

  const std::vector<Suppression> &entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  bool matches(const Suppression &suppression, const ProcessReport &process, const Leak &leak) const;
  static bool parse_qualifier(std::string_view word, Suppression &suppression, const std::string &where,
                              std::string &error);
  std::vector<Suppression> entries_;
};

// A suppression line that would silence `group` (its first frame with a known function,
// else its module), for --gen-suppressions.
std::string suggest_suppression(const ProcessReport &process, uint32_t stack_id);

}  // namespace leaseguard::report
