// Where a report is handed as it is made, a piece at a time: a file, stderr, a string.
//
// Every renderer writes to one: a report of 1e5 leaks is ~150 MB of JSON, which held whole
// (and grown by doubling, then copied) took three times that.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace leaseguard::report {

using TextSink = std::function<void(std::string_view)>;

// How much text a renderer gathers before it hands it to its sink.
inline constexpr size_t kSinkPieceBytes = 64 * 1024;

// Text gathered for a sink: handed over once it holds kSinkPieceBytes (hand_over_if_full,
// called between whole pieces of the report), and what is left at finish().
class SinkBuffer {
 public:
  explicit SinkBuffer(const TextSink &sink) : sink_(sink) {}
  std::string &text() noexcept { return text_; }
  void hand_over_if_full() {
    if (text_.size() < kSinkPieceBytes) return;
    sink_(text_);
    text_.clear();
  }
  void finish() {
    sink_(text_);
    text_.clear();
  }

 private:
  const TextSink &sink_;
  std::string text_;
};

}  // namespace leaseguard::report
