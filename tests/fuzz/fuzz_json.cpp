// libFuzzer target: the JSON reader (report files read back), and a write/read round trip
// of every string it decodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "report/json_value.h"
#include "report/json_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using leaseguard::report::JsonValue;
  using leaseguard::report::JsonWriter;
  JsonValue value;
  std::string error;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  if (!JsonValue::parse(text, value, error)) return 0;
  if (value.type() == JsonValue::Type::String) {
    JsonWriter writer;
    writer.value(value.as_string());
    JsonValue again;
    if (!JsonValue::parse(writer.text(), again, error)) std::abort();  // our output must parse
  }
  return 0;
}
