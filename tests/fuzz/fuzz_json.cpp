// libFuzzer target: the JSON reader (report files read back), and a write/read round trip
// of every string it decodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "json_value.h"
#include "json_writer.h"

namespace {

// Reads every string and item reachable through arrays and a few member names (the strings
// live in the document's root: a dangling one would show under the sanitizers).
size_t touch(const leaseguard::report::JsonValue &value, int depth) {
  using leaseguard::report::JsonValue;
  size_t bytes = value.as_string().size() + value.size();
  if (depth > 200) return bytes;
  for (const JsonValue &item : value.items()) bytes += touch(item, depth + 1);
  for (const char *name : {"a", "b", "schema", "processes", "leases", "leaks", "stack", ""})
    if (value.has(name)) bytes += touch(value[name], depth + 1);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using leaseguard::report::JsonValue;
  using leaseguard::report::JsonWriter;
  JsonValue value;
  std::string error;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  if (!JsonValue::parse(text, value, error)) {
    if (value.type() != JsonValue::Type::Null || touch(value, 0) != 0) std::abort();  // nothing is left of it
    return 0;
  }
  volatile size_t touched = touch(value, 0);
  (void)touched;
  if (value.type() == JsonValue::Type::String) {
    JsonWriter writer;
    writer.value(value.as_string());
    JsonValue again;
    if (!JsonValue::parse(writer.text(), again, error)) std::abort();  // our output must parse
  }
  return 0;
}
