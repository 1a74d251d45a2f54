// Parsing of LEASEGUARD_* environment variables and of durations.
#include "options.h"

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

Options parse_options(const EnvLookup &lookup, std::vector<std::string> &warnings) {
  Options options;
  auto get = [&](const char *name) -> std::optional<std::string_view> {
    const char *value = lookup(name);
    if (value == nullptr) return std::nullopt;
    return std::string_view(value);
  };
  auto warn = [&](const char *name, std::string_view value, std::string_view instead) {
    warnings.push_back(std::string(name) + "='" + std::string(value) + "' is not valid; using " +
                       std::string(instead));
  };

  if (auto value = get("LEASEGUARD_DISABLE")) {
    if (*value == "1" || *value == "true" || *value == "yes") options.disabled = true;
    else if (!(*value == "0" || *value == "false" || *value == "no" || value->empty()))
      warn("LEASEGUARD_DISABLE", *value, "0 (enabled)");
  }
  if (auto value = get("LEASEGUARD_LOG")) {
    if (*value == "quiet") options.log_level = LogLevel::Quiet;
    else if (*value == "info") options.log_level = LogLevel::Info;
    else if (*value == "debug") options.log_level = LogLevel::Debug;
    else warn("LEASEGUARD_LOG", *value, "info");
  }
  if (auto value = get("LEASEGUARD_OUT")) {
    if (value->empty()) warn("LEASEGUARD_OUT", *value, options.out_dir);
    else options.out_dir = std::string(*value);
  }
  if (auto value = get("LEASEGUARD_TTL")) {
    if (auto ms = parse_duration_ms(*value)) options.ttl_ms = *ms;
    else warn("LEASEGUARD_TTL", *value, "no time-to-live");
  }
  if (auto value = get("LEASEGUARD_ON_EXPIRY")) {
    if (auto policy = policy_from_name(*value)) options.on_expiry = *policy;
    else warn("LEASEGUARD_ON_EXPIRY", *value, "report");
  }
  if (auto value = get("LEASEGUARD_STACK_DEPTH")) {
    if (auto depth = parse_integer(*value, 0, kMaxStackDepth)) {
      options.stack_depth = static_cast<int>(*depth);
    } else {
      warn("LEASEGUARD_STACK_DEPTH", *value,
           std::to_string(kDefaultStackDepth) + " (allowed: 0.." + std::to_string(kMaxStackDepth) + ")");
    }
  }
  if (auto value = get("LEASEGUARD_RUN_ID")) {
    bool ok = !value->empty() && value->size() <= 64;
    for (char c : *value)
      ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-');
    if (ok) options.run_id = std::string(*value);
    else warn("LEASEGUARD_RUN_ID", *value, "none");
  }
  return options;
}

}  // namespace leaseguard
