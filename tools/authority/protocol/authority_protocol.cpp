#include "authority_protocol.h"

#include <array>
#include <charconv>

namespace leaseguard::authority {
namespace {

constexpr std::array<std::string_view, 3> kTeardownNames = {"report", "reclaim", "terminate"};
constexpr std::array<std::string_view, 8> kVerbNames = {"start",  "register", "list", "end",
                                                        "extend", "exited",   "wait", "snapshot"};

// The fields a verb takes; any other is refused.
enum Field : unsigned {
  kName = 1,
  kLease = 2,
  kTtl = 4,
  kTeardownField = 8,
  kGrace = 16,
  kJournal = 32,
  kStartTime = 64,
  kStatus = 128,
  kOwner = 256
};
constexpr std::array<unsigned, 8> kFieldsOf = {
    kName | kTtl | kTeardownField | kGrace | kOwner,  // start
    kLease | kJournal | kStartTime,                   // register
    0,                                                // list
    kLease,                                           // end
    kLease | kTtl,                                    // extend
    kLease | kStatus,                                 // exited
    kLease,                                           // wait
    0,                                                // snapshot
};
// The fields a verb cannot go without.
constexpr std::array<unsigned, 8> kRequiredOf = {
    0, kLease | kJournal | kStartTime, 0, kLease, kLease | kTtl, kLease | kStatus, kLease, 0};

struct FieldName {
  std::string_view key;
  Field field;
};
constexpr std::array<FieldName, 9> kFieldNames = {{{"name", kName},
                                                   {"lease", kLease},
                                                   {"ttl_ms", kTtl},
                                                   {"teardown", kTeardownField},
                                                   {"grace_ms", kGrace},
                                                   {"journal", kJournal},
                                                   {"start_time", kStartTime},
                                                   {"status", kStatus},
                                                   {"owner", kOwner}}};

bool printable(std::string_view text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

std::optional<uint64_t> number(std::string_view text, uint64_t max) {
  uint64_t value = 0;
  if (text.empty() || text.size() > 20) return std::nullopt;
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (problem != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

// Splits `message` into its first line and the key=value lines after it; false with `error`
// if a line is not one.
bool split(std::string_view message, size_t limit, std::string_view &head,
           std::vector<std::pair<std::string_view, std::string_view>> &fields, std::string &error) {
  if (message.size() > limit) {
    error = "message longer than " + std::to_string(limit) + " bytes";
    return false;
  }
  if (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  size_t newline = message.find('\n');
  head = message.substr(0, newline);
  while (newline != std::string_view::npos) {
    message.remove_prefix(newline + 1);
    newline = message.find('\n');
    const std::string_view line = message.substr(0, newline);
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      error = "a line of the message is not key=value";
      return false;
    }
    const std::string_view key = line.substr(0, equals), value = line.substr(equals + 1);
    for (char c : key)
      if ((c < 'a' || c > 'z') && c != '_') {
        error = "a key of the message is not a lower-case word";
        return false;
      }
    if (!printable(value)) {
      error = "a value of the message has control characters";
      return false;
    }
    fields.emplace_back(key, value);
  }
  if (!printable(head)) {
    error = "the message's first line has control characters";
    return false;
  }
  return true;
}

bool parse_field(Field field, std::string_view value, Request &request, std::string &error) {
  switch (field) {
    case kName:
      if (!valid_lease_name(value)) break;
      request.name = value;
      return true;
    case kLease:
      if (!valid_lease_name(value)) break;
      request.lease = value;
      return true;
    case kTtl:
      if (auto ms = number(value, kMaxTtlMs)) {
        request.ttl_ms = *ms;
        return true;
      }
      break;
    case kTeardownField:
      if (auto teardown = teardown_from_name(value)) {
        request.teardown = *teardown;
        return true;
      }
      break;
    case kGrace:
      if (auto ms = number(value, kMaxGraceMs)) {
        request.grace_ms = *ms;
        return true;
      }
      break;
    case kJournal:
      if (value.empty() || value[0] != '/' || value.size() > kMaxPathBytes) break;
      request.journal = value;
      return true;
    case kStartTime:
      if (auto ticks = number(value, UINT64_MAX)) {
        request.start_time = *ticks;
        return true;
      }
      break;
    case kStatus:
      if (auto status = number(value, 255 + 128)) {
        request.status = static_cast<int>(*status);
        return true;
      }
      break;
    case kOwner:
      // (uid_t)-1 is no user: chown's "leave it".
      if (auto uid = number(value, UINT32_MAX - 1)) {
        request.owner = static_cast<uid_t>(*uid);
        return true;
      }
      break;
  }
  error = "bad value for a request's field";
  return false;
}

void append_field(std::string &message, std::string_view key, std::string_view value) {
  message.append(key).append("=").append(value).append("\n");
}

}  // namespace

std::string_view teardown_name(Teardown teardown) noexcept {
  const auto index = static_cast<size_t>(teardown);
  return index < kTeardownNames.size() ? kTeardownNames[index] : "unknown";
}

std::optional<Teardown> teardown_from_name(std::string_view name) noexcept {
  for (size_t i = 0; i < kTeardownNames.size(); ++i)
    if (kTeardownNames[i] == name) return static_cast<Teardown>(i);
  return std::nullopt;
}

std::string_view verb_name(Verb verb) noexcept {
  const auto index = static_cast<size_t>(verb);
  return index < kVerbNames.size() ? kVerbNames[index] : "unknown";
}

bool valid_lease_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '_' || c == '-' || c == '@' || c == ':' || c == '+';
    if (!allowed) return false;
  }
  return name != "." && name != "..";
}

bool parse_request(std::string_view message, Request &request, std::string &error) {
  std::string_view head;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  if (!split(message, kMaxMessageBytes, head, fields, error)) return false;
  const size_t space = head.find(' ');
  const std::string_view protocol = head.substr(0, space);
  const std::string expected = std::string(kProtocolName) + "/" + std::to_string(kProtocolVersion);
  if (protocol != expected) {
    error = protocol.substr(0, kProtocolName.size() + 1) == std::string(kProtocolName) + "/"
                ? "protocol version " + std::string(protocol.substr(kProtocolName.size() + 1, 8)) +
                      " asked; this daemon speaks " + std::to_string(kProtocolVersion)
                : "not a leaseguard lease authority request";
    return false;
  }
  const std::string_view verb = space == std::string_view::npos ? std::string_view() : head.substr(space + 1);
  size_t verb_index = kVerbNames.size();
  for (size_t i = 0; i < kVerbNames.size(); ++i)
    if (kVerbNames[i] == verb) verb_index = i;
  if (verb_index == kVerbNames.size()) {
    error = "unknown request";
    return false;
  }
  request = Request{};
  request.verb = static_cast<Verb>(verb_index);
  unsigned seen = 0;
  for (const auto &[key, value] : fields) {
    const FieldName *known = nullptr;
    for (const FieldName &candidate : kFieldNames)
      if (candidate.key == key) known = &candidate;
    if (known == nullptr || (kFieldsOf[verb_index] & known->field) == 0) {
      error = "field '" + std::string(key.substr(0, 32)) + "' is not one of a " + std::string(verb) + " request's";
      return false;
    }
    if ((seen & known->field) != 0) {
      error = "field '" + std::string(key) + "' given twice";
      return false;
    }
    seen |= known->field;
    if (!parse_field(known->field, value, request, error)) {
      error = "bad value for field '" + std::string(key) + "'";
      return false;
    }
  }
  if ((seen & kRequiredOf[verb_index]) != kRequiredOf[verb_index]) {
    error = "a " + std::string(verb) + " request lacks a field it needs";
    return false;
  }
  return true;
}

std::string format_request(const Request &request) {
  const auto verb_index = static_cast<size_t>(request.verb);
  const unsigned fields = verb_index < kFieldsOf.size() ? kFieldsOf[verb_index] : 0;
  std::string message = std::string(kProtocolName) + "/" + std::to_string(kProtocolVersion) + " " +
                        std::string(verb_name(request.verb)) + "\n";
  if ((fields & kName) && !request.name.empty()) append_field(message, "name", request.name);
  if (fields & kLease) append_field(message, "lease", request.lease);
  if (fields & kTtl) append_field(message, "ttl_ms", std::to_string(request.ttl_ms));
  if (fields & kTeardownField) append_field(message, "teardown", teardown_name(request.teardown));
  if (fields & kGrace) append_field(message, "grace_ms", std::to_string(request.grace_ms));
  if (fields & kJournal) append_field(message, "journal", request.journal);
  if (fields & kStartTime) append_field(message, "start_time", std::to_string(request.start_time));
  if (fields & kStatus) append_field(message, "status", std::to_string(request.status));
  if ((fields & kOwner) && request.owner) append_field(message, "owner", std::to_string(*request.owner));
  return message;
}

std::optional<std::string_view> Answer::field(std::string_view key) const {
  for (const auto &[name, value] : fields)
    if (name == key) return std::string_view(value);
  return std::nullopt;
}

bool parse_answer(std::string_view message, Answer &answer, std::string &error) {
  std::string_view head;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  if (!split(message, kMaxAnswerBytes, head, fields, error)) return false;
  if (head != "ok" && head != "error") {
    error = "not a leaseguard lease authority answer";
    return false;
  }
  answer = Answer{};
  answer.ok = head == "ok";
  for (const auto &[key, value] : fields) answer.fields.emplace_back(key, value);
  return true;
}

std::string format_answer(const Answer &answer) {
  std::string message = answer.ok ? "ok\n" : "error\n";
  for (const auto &[key, value] : answer.fields) append_field(message, key, value);
  return message;
}

std::string error_answer(std::string_view text) {
  std::string clean(text.substr(0, 512));
  for (char &c : clean)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return format_answer(Answer{false, {{"message", clean}}});
}

}  // namespace leaseguard::authority
