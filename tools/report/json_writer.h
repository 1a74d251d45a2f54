// A small streaming JSON writer: correct escaping, no dependencies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text_sink.h"

namespace leaseguard::report {

class JsonWriter {
 public:
  // Keeps the whole text (text()).
  explicit JsonWriter(int indent = 2) : indent_(indent) {}
  // Hands the text to `sink` a piece at a time (text_sink.h), each piece ending after a key,
  // a value or a bracket; finish() hands over the rest.
  JsonWriter(int indent, TextSink sink) : indent_(indent), sink_(std::move(sink)) { out_.reserve(kSinkPieceBytes * 2); }
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

  // The text so far (with a sink: what has not been handed over yet).
  const std::string &text() const { return out_; }

  static std::string escape(std::string_view text);
  // escape(text), added to the end of `out`.
  static void append_escaped(std::string &out, std::string_view text);

 private:
  void before_value();
  void newline();
  // Hands the text over once it holds kSinkPieceBytes; after each key, value or bracket.
  void hand_over_if_full() {
    if (sink_ && out_.size() >= kSinkPieceBytes) finish();
  }

  std::string out_;
  int indent_;
  TextSink sink_;
  struct Level {
    bool array;
    bool empty;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace leaseguard::report
