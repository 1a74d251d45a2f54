// Parsing and applying leak suppressions (see suppressions.h).
#include "suppressions.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "files.h"
#include "options.h"
#include "runtime_frames.h"

namespace leaseguard::report {
namespace {

// Glob match of `pattern` (only `*` is special) against all of `text`, iteratively (no
// recursion: a hostile pattern cannot exhaust the stack, and the cost is O(n*m) at worst).
bool glob_matches(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k': scale = 1ull << 10; break;
      case 'M':
      case 'm': scale = 1ull << 20; break;
      case 'G':
      case 'g': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  auto value = parse_integer(text, 0, INT64_MAX);
  if (!value || static_cast<uint64_t>(*value) > UINT64_MAX / scale) return std::nullopt;
  return static_cast<uint64_t>(*value) * scale;
}

bool wildcard_matches(std::string_view pattern, std::string_view text) { return glob_matches(pattern, text); }

bool suppression_pattern_matches(std::string_view pattern, std::string_view text) {
  bool anchored_start = !pattern.empty() && pattern.front() == '^';
  if (anchored_start) pattern.remove_prefix(1);
  bool anchored_end = !pattern.empty() && pattern.back() == '$';
  if (anchored_end) pattern.remove_suffix(1);
  std::string glob;
  if (!anchored_start) glob += '*';
  glob += pattern;
  if (!anchored_end) glob += '*';
  return glob_matches(glob, text);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The line without its comment: `#` at its start or after a space or tab begins one (a `#`
// inside a word belongs to it: GCC names lambdas `{lambda(int)#1}`).
std::string_view without_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || is_space(line[i - 1]))) return line.substr(0, i);
  return line;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// A word that reads as a qualifier: letters and underscores, then `=`. Names of functions
// never end a pattern with one (`operator=` comes with its class and parameters).
bool looks_like_qualifier(std::string_view word) {
  const size_t equals = word.find('=');
  if (equals == std::string_view::npos || equals == 0) return false;
  for (size_t i = 0; i < equals; ++i)
    if (!(std::isalpha(static_cast<unsigned char>(word[i])) || word[i] == '_')) return false;
  return true;
}

}  // namespace

// A line is `leak:PATTERN [QUALIFIER...] [# comment]`. The pattern runs to the qualifiers,
// spaces included (C++ names hold them: `(anonymous namespace)`, `unsigned long`), so every
// line --gen-suppressions writes reads back as the pattern it wrote.
bool Suppressions::parse(std::string_view text, const std::string &name, std::string &error) {
  std::istringstream lines{std::string(text)};
  std::string raw;
  int number = 0;
  while (std::getline(lines, raw)) {
    ++number;
    const std::string where = name + ":" + std::to_string(number);
    std::string_view line = trimmed(without_comment(raw));
    if (line.empty()) continue;
    if (line.rfind("leak:", 0) != 0) {
      error = where + ": not a leak suppression (want leak:PATTERN)";
      return false;
    }
    line.remove_prefix(5);
    Suppression suppression;
    suppression.source = where;
    // Qualifiers are the words at the end that read as one.
    for (;;) {
      line = trimmed(line);
      size_t space = line.size();
      while (space > 0 && !is_space(line[space - 1])) --space;
      const std::string_view word = line.substr(space);
      if (space == 0 || !looks_like_qualifier(word)) break;
      if (!parse_qualifier(word, suppression, where, error)) return false;
      line = line.substr(0, space);
    }
    suppression.pattern = std::string(line);
    if (suppression.pattern.empty()) {
      error = where + ": empty pattern";
      return false;
    }
    entries_.push_back(std::move(suppression));
  }
  return true;
}

bool Suppressions::parse_qualifier(std::string_view word, Suppression &suppression, const std::string &where,
                                   std::string &error) {
  if (word.rfind("api=", 0) == 0 && word.size() > 4) {
    suppression.api_pattern = std::string(word.substr(4));
    return true;
  }
  if (word.rfind("min_bytes=", 0) == 0) {
    auto bytes = parse_byte_size(word.substr(10));
    if (!bytes) {
      error = where + ": min_bytes wants a size such as 4096, 64K or 1M";
      return false;
    }
    suppression.min_bytes = *bytes;
    return true;
  }
  error = where + ": unknown qualifier '" + std::string(word) + "' (api=PATTERN, min_bytes=SIZE)";
  return false;
}

bool Suppressions::load(const std::string &path, std::string &error) {
  std::string text, why;
  if (!read_regular_file(path, text, why)) {
    error = "cannot read suppressions " + path + why.substr(why.rfind(':'));
    return false;
  }
  return parse(text, path, error);
}

bool Suppressions::matches(const Suppression &suppression, const ProcessReport &process, const Leak &leak) const {
  if (leak.bytes < suppression.min_bytes) return false;
  if (!suppression.api_pattern.empty() && !glob_matches(suppression.api_pattern, api_name(leak.api))) return false;
  for (const Frame &frame : process.stack(leak.stack_id)) {
    if (!frame.module.empty() && suppression_pattern_matches(suppression.pattern, frame.module)) return true;
    if (frame.function && suppression_pattern_matches(suppression.pattern, *frame.function)) return true;
    if (frame.file && suppression_pattern_matches(suppression.pattern, *frame.file)) return true;
  }
  return false;
}

void Suppressions::apply(Report &report) {
  if (entries_.empty()) return;
  for (ProcessReport &process : report.processes) {
    for (LeaseEnding &lease : process.leases) {
      std::vector<Leak> kept;
      for (Leak &leak : lease.leaks) {
        Suppression *hit = nullptr;
        for (Suppression &suppression : entries_)
          if (matches(suppression, process, leak)) {
            hit = &suppression;
            break;
          }
        if (hit == nullptr) {
          kept.push_back(leak);
          continue;
        }
        ++hit->hit_allocations;
        hit->hit_bytes += leak.bytes;
        ++report.suppressed_allocations;
      }
      lease.leaks = std::move(kept);
    }
  }
  for (const Suppression &suppression : entries_) {
    if (suppression.hit_allocations == 0) continue;
    std::string rule = "leak:" + suppression.pattern;
    if (!suppression.api_pattern.empty()) rule += " api=" + suppression.api_pattern;
    if (suppression.min_bytes != 0) rule += " min_bytes=" + std::to_string(suppression.min_bytes);
    report.suppressions_used.push_back({rule, suppression.source, suppression.hit_allocations, suppression.hit_bytes});
  }
}

namespace {

// `leak:PATTERN`, which parse() reads back as exactly PATTERN. Where it would not read back
// so (a space before a `#` or before a last word that reads as a qualifier, a control
// character), its spaces and control characters become `*`, which matches them.
std::string rule_for(const std::string &pattern) {
  std::string rule = "leak:" + pattern;
  Suppressions probe;
  std::string error;
  const bool plain = pattern.find_first_of("\n\v\f") == std::string::npos && probe.parse(rule, "", error) &&
                     probe.entries().size() == 1 && probe.entries()[0].pattern == pattern &&
                     probe.entries()[0].api_pattern.empty() && probe.entries()[0].min_bytes == 0;
  if (plain) return rule;
  std::string escaped = pattern;
  for (char &c : escaped)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c))) c = '*';
  return "leak:" + escaped;
}

}  // namespace

std::string suggest_suppression(const ProcessReport &process, uint32_t stack_id) {
  // From the leak's site, never the runtime's frames below it (runtime_frames.h): a rule
  // naming cudaMalloc's would silence every leak that came through it.
  const StackView stack = process.stack(stack_id);
  for (size_t i = runtime_frame_count(stack); i < stack.size(); ++i)
    if (stack[i].function) return rule_for("^" + *stack[i].function + "$");
  if (const Frame *site = site_frame(stack); site != nullptr && !site->module.empty())
    return rule_for(site->module.substr(site->module.rfind('/') + 1));
  return "";
}

}  // namespace leaseguard::report
