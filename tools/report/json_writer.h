// A small streaming JSON writer: correct escaping, no dependencies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace leaseguard::report {

class JsonWriter {
 public:
  // Where a writer hands its text once it holds this much: a report of 1e5 leaks is ~150 MB
  // of JSON, which held whole (and grown by doubling, then copied) took three times that.
  using Spill = std::function<void(std::string_view)>;
  static constexpr size_t kSpillBytes = 64 * 1024;

  // Keeps the whole text (text()).
  explicit JsonWriter(int indent = 2) : indent_(indent) {}
  // Hands the text to `spill` a piece at a time, each piece ending after a key, a value or
  // a bracket; finish() hands over the rest.
  JsonWriter(int indent, Spill spill) : indent_(indent), spill_(std::move(spill)) { out_.reserve(kSpillBytes * 2); }
  void finish();

  JsonWriter &begin_object();
  JsonWriter &end_object();
  JsonWriter &begin_array();
  JsonWriter &end_array();
  JsonWriter &key(std::string_view name);
  JsonWriter &value(std::string_view text);
  JsonWriter &value(const char *text) { return value(std::string_view(text)); }
  JsonWriter &value(const std::string &text) { return value(std::string_view(text)); }
  JsonWriter &value(int64_t number);
  JsonWriter &value(uint64_t number);
  JsonWriter &value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter &value(unsigned number) { return value(static_cast<uint64_t>(number)); }
  JsonWriter &value(double number);
  JsonWriter &value(bool flag);
  JsonWriter &null();

  // The text so far (with a spill: what has not been handed over yet).
  const std::string &text() const { return out_; }

  static std::string escape(std::string_view text);

 private:
  void before_value();
  void newline();
  // Hands the text over once it holds kSpillBytes; after each key, value or bracket.
  void spill_if_full() {
    if (spill_ && out_.size() >= kSpillBytes) finish();
  }

  std::string out_;
  int indent_;
  Spill spill_;
  struct Level {
    bool array;
    bool empty;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace leaseguard::report
