// Parsing of LEASEGUARD_* environment variables and of durations.
#include "options.h"

#include "option_table.h"

#include <algorithm>
#include <cstring>

#include <time.h>

#include <charconv>
#include <limits>

namespace leaseguard {

std::optional<long long> parse_integer(std::string_view text, long long min, long long max) {
  if (text.empty()) return std::nullopt;
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_duration_ms(std::string_view text) {
  if (text == "0") return 0;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc()) return std::nullopt;
  std::string_view unit = text.substr(digits);
  uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else return std::nullopt;
  if (value > std::numeric_limits<uint64_t>::max() / scale) return std::nullopt;
  return value * scale;
}

namespace {

bool digits(std::string_view text, size_t at, size_t count, int &value) {
  if (at + count > text.size()) return false;
  value = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  return true;
}

// Days from 1970-01-01 to year-month-day (proleptic Gregorian), without the C library's
// time zone state.
int64_t days_from_civil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const unsigned year_of_era = static_cast<unsigned>(year - era * 400);
  const unsigned day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + static_cast<int64_t>(day_of_era) - 719468;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

std::optional<uint64_t> parse_deadline_ns(std::string_view text) {
  if (!text.empty() && text[0] == '@') {
    std::string_view number = text.substr(1);
    size_t dot = number.find('.');
    auto seconds = parse_integer(number.substr(0, dot), 0, 253402300799);  // up to year 9999
    if (!seconds) return std::nullopt;
    uint64_t nanoseconds = 0;
    if (dot != std::string_view::npos) {
      std::string_view fraction = number.substr(dot + 1);
      if (fraction.empty() || fraction.size() > 9) return std::nullopt;
      for (size_t i = 0; i < 9; ++i) {
        char c = i < fraction.size() ? fraction[i] : '0';
        if (c < '0' || c > '9') return std::nullopt;
        nanoseconds = nanoseconds * 10 + static_cast<uint64_t>(c - '0');
      }
    }
    return static_cast<uint64_t>(*seconds) * 1'000'000'000ull + nanoseconds;
  }
  int year, month, day, hour, minute, second;
  if (text.size() < 20 || !digits(text, 0, 4, year) || text[4] != '-' || !digits(text, 5, 2, month) || text[7] != '-' ||
      !digits(text, 8, 2, day) || (text[10] != 'T' && text[10] != 't') || !digits(text, 11, 2, hour) ||
      text[13] != ':' || !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second))
    return std::nullopt;
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 60)
    return std::nullopt;
  size_t at = 19;
  uint64_t nanoseconds = 0;
  if (at < text.size() && text[at] == '.') {
    size_t start = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    if (at == start) return std::nullopt;
    for (size_t i = 0; i < 9; ++i)
      nanoseconds = nanoseconds * 10 + (start + i < at ? static_cast<uint64_t>(text[start + i] - '0') : 0);
  }
  int64_t offset_seconds = 0;
  std::string_view zone = text.substr(at);
  if (zone == "Z" || zone == "z") {
    offset_seconds = 0;
  } else {
    int offset_hours, offset_minutes;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || !digits(zone, 1, 2, offset_hours) || zone[3] != ':' ||
        !digits(zone, 4, 2, offset_minutes) || offset_hours > 23 || offset_minutes > 59)
      return std::nullopt;
    offset_seconds = (zone[0] == '+' ? 1 : -1) * (offset_hours * 3600 + offset_minutes * 60);
  }
  int64_t seconds = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
                    hour * 3600 + minute * 60 + second - offset_seconds;
  if (seconds < 0) return std::nullopt;
  return static_cast<uint64_t>(seconds) * 1'000'000'000ull + nanoseconds;
}

std::optional<JournalMode> journal_mode_from_name(std::string_view name) {
  if (name == "full") return JournalMode::Full;
  if (name == "compact") return JournalMode::Compact;
  return std::nullopt;
}

std::optional<uint64_t> parse_byte_count(std::string_view text) {
  size_t digits = 0;
  uint64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, uint64_t(text[digits] - '0'), &value))
      return std::nullopt;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  std::string_view unit = text.substr(digits);
  int shift = 0;
  if (!unit.empty()) {
    const char *units = "KMGT";
    const char *found = std::strchr(units, unit[0] & ~0x20);
    if (found == nullptr || *found == '\0') return std::nullopt;
    shift = 10 * static_cast<int>(found - units + 1);
    unit.remove_prefix(1);
    if (!(unit.empty() || unit == "iB" || unit == "B")) return std::nullopt;
  }
  if (shift != 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<ReachabilityMode> reachability_mode_from_name(std::string_view name) {
  if (name == "exit") return ReachabilityMode::Exit;
  if (name == "off") return ReachabilityMode::Off;
  if (name == "leases") return ReachabilityMode::Leases;
  return std::nullopt;
}

bool parse_device_scan(std::string_view text, uint64_t &total, uint64_t &per_allocation) {
  const size_t comma = text.find(',');
  auto first = parse_byte_count(text.substr(0, comma));
  if (!first) return false;
  std::optional<uint64_t> second = std::min(*first, kDefaultDeviceScanAllocationBytes);
  if (comma != std::string_view::npos && !(second = parse_byte_count(text.substr(comma + 1)))) return false;
  total = *first;
  per_allocation = *second;
  return true;
}

Options parse_options(const EnvLookup &lookup, std::vector<std::string> &warnings, uint64_t now_unix_ns) {
  Options options;
  for (const OptionRow &row : option_rows()) {
    const char *value = lookup(row.variable.data());  // the table's names are literals
    if (value == nullptr) continue;
    if (!row.apply(value, options))
      warnings.push_back(std::string(row.variable) + "='" + value + "' is not valid; using " +
                         std::string(row.fallback));
    if (row.variable == "LEASEGUARD_DEADLINE" && options.deadline_unix_ns && now_unix_ns != 0 &&
        *options.deadline_unix_ns <= now_unix_ns)
      warnings.push_back("LEASEGUARD_DEADLINE='" + std::string(value) +
                         "' is already past: the process lease ends as the process starts");
  }
  return options;
}

bool settings_checked_by_run(const Options &options) { return !options.run_id.empty(); }

uint64_t wall_clock_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace leaseguard
