// The progress line (progress.h).
#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace leaseguard::report {
namespace {

// Work that ends within a second is never announced; the line is rewritten every 250 ms
// after. LEASEGUARD_PROGRESS_AFTER_MS changes the second (the tests make it 0, and the line
// is then rewritten every millisecond, so that a short report shows it too).
struct Timing {
  std::chrono::milliseconds quiet_for{1000};
  std::chrono::milliseconds every{250};
};

Timing timing() {
  Timing result;
  const char *after = std::getenv("LEASEGUARD_PROGRESS_AFTER_MS");
  if (after == nullptr || *after == '\0') return result;
  char *end = nullptr;
  const long value = std::strtol(after, &end, 10);
  if (*end != '\0' || value < 0 || value > 3600000) return result;
  result.quiet_for = std::chrono::milliseconds(value);
  result.every = std::min(result.every, std::max(result.quiet_for, std::chrono::milliseconds(1)));
  return result;
}

std::string bytes_text(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace

Progress &Progress::instance() {
  static Progress progress;
  return progress;
}

void Progress::start(bool enabled) {
  if (!enabled || thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = false;
    enabled_ = true;
    speak_from_ = std::chrono::steady_clock::now() + timing().quiet_for;
  }
  thread_ = std::thread([this] { run(); });
}

void Progress::stage(const std::string &what, uint64_t total) {
  std::lock_guard lock(mutex_);
  stage_ = what;
  total_ = total;
  done_.store(0, std::memory_order_relaxed);
  // A new stage is said at once once the quiet second is over, not at the next rewrite.
  if (enabled_ && !stopping_ && std::chrono::steady_clock::now() >= speak_from_) print_locked();
}

void Progress::print_locked() {
  if (stage_.empty()) return;
  // \r and "erase to the end of the line": the line is rewritten in place.
  std::fprintf(stderr, "\r\x1b[K%s", line().c_str());
  std::fflush(stderr);
  printed_ = true;
}

std::string Progress::line() const {
  std::string text = "leaseguard: " + stage_;
  const uint64_t done = std::min(done_.load(std::memory_order_relaxed), total_);
  if (total_ != 0) {
    char percent[64];
    std::snprintf(percent, sizeof percent, " %3.0f%% (%s of %s)", 100.0 * static_cast<double>(done) / total_,
                  bytes_text(done).c_str(), bytes_text(total_).c_str());
    text += percent;
  } else {
    text += "...";
  }
  return text;
}

void Progress::run() {
  const Timing when = timing();
  std::unique_lock lock(mutex_);
  if (wake_.wait_until(lock, speak_from_, [this] { return stopping_; })) return;
  while (!stopping_) {
    print_locked();
    wake_.wait_for(lock, when.every, [this] { return stopping_; });
  }
}

void Progress::finish() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    enabled_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (printed_) {
    std::fprintf(stderr, "\r\x1b[K");
    std::fflush(stderr);
    printed_ = false;
  }
}

}  // namespace leaseguard::report
