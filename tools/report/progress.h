// What a long report is doing, said on a terminal: reading 4.5 GB of journals takes seconds,
// and a command that sits silent that long looks hung. Nothing is printed for work that ends
// within a second, nor when stderr is not a terminal, nor under --quiet: one line, rewritten
// in place (carriage return), and cleared when the work ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace leaseguard::report {

class Progress {
 public:
  // The process's one: the journal reader reports into it from deep inside load_report.
  static Progress &instance();

  // Starts saying progress where `enabled` (stderr a terminal, not --quiet); until finish().
  void start(bool enabled);
  // A new stage, `total` units of work (0: unknown, then only the stage is named).
  void stage(const std::string &what, uint64_t total);
  void set_done(uint64_t done) { done_.store(done, std::memory_order_relaxed); }
  // Work done in parts (journals one after another): `base` is what the parts before this one
  // hold, and set_part_done() says how far into this one.
  void begin_part(uint64_t base) { part_base_.store(base, std::memory_order_relaxed); }
  void set_part_done(uint64_t done) { set_done(part_base_.load(std::memory_order_relaxed) + done); }
  uint64_t done() const { return done_.load(std::memory_order_relaxed); }
  // Stops, and clears the line if one was printed.
  void finish();

  ~Progress() { finish(); }

 private:
  void run();
  std::string line() const;
  void print_locked();  // the line, now (mutex_ held)

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stopping_ = false;
  bool printed_ = false;
  bool enabled_ = false;
  std::chrono::steady_clock::time_point speak_from_;  // when the quiet second is over
  std::string stage_;                                 // under mutex_
  uint64_t total_ = 0;                                // under mutex_
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> part_base_{0};
};

// Progress shown while it lives (where `enabled`), cleared when it goes.
class ProgressShown {
 public:
  explicit ProgressShown(bool enabled) { Progress::instance().start(enabled); }
  ~ProgressShown() { Progress::instance().finish(); }
  ProgressShown(const ProgressShown &) = delete;
  ProgressShown &operator=(const ProgressShown &) = delete;
};

}  // namespace leaseguard::report
