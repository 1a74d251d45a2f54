// Implementation of the event clock (see event_clock.h for why it is the coarse one).
#include "event_clock.h"

#include <algorithm>
#include <limits>

namespace leaseguard {

namespace detail {
std::atomic<clockid_t> g_event_clock{CLOCK_MONOTONIC_COARSE};
}  // namespace detail

namespace {

// The fastest of a few batches of reads, in nanoseconds a read.
double cost_of_reading(clockid_t clock) noexcept {
  constexpr int kReads = 16;
  double fastest = std::numeric_limits<double>::infinity();
  for (int batch = 0; batch < 3; ++batch) {
    const uint64_t begin = monotonic_ns();
    timespec now;
    for (int i = 0; i < kReads; ++i) clock_gettime(clock, &now);
    fastest = std::min(fastest, static_cast<double>(monotonic_ns() - begin) / kReads);
  }
  return fastest;
}

}  // namespace

bool coarse_clock_is_cheap_enough(double coarse_read_ns, double fine_read_ns) noexcept {
  // A vDSO read of the coarse clock takes a few nanoseconds, of the fine one tens (7 and 33
  // on a virtual machine here); a system call, 150 there and over a microsecond into
  // gVisor's kernel. Only a coarse read far above both marks is a system call worth
  // avoiding. Where both clocks are system calls (no vDSO), they cost alike: coarse kept.
  constexpr double kVdsoReadNs = 60;
  return coarse_read_ns <= kVdsoReadNs || coarse_read_ns <= 3 * fine_read_ns;
}

void choose_event_clock() noexcept {
  static std::atomic<bool> chosen{false};
  if (chosen.exchange(true, std::memory_order_acq_rel)) return;
  timespec resolution{};
  const bool coarse_exists = clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0;
  if (!coarse_exists ||
      !coarse_clock_is_cheap_enough(cost_of_reading(CLOCK_MONOTONIC_COARSE), cost_of_reading(CLOCK_MONOTONIC)))
    detail::g_event_clock.store(CLOCK_MONOTONIC, std::memory_order_relaxed);
}

uint32_t event_clock_resolution_ns() noexcept {
  timespec resolution{};
  if (clock_getres(detail::g_event_clock.load(std::memory_order_relaxed), &resolution) != 0 || resolution.tv_sec != 0)
    return 0;
  return static_cast<uint32_t>(resolution.tv_nsec);
}

uint64_t monotonic_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return detail::nanoseconds_of(now);
}

}  // namespace leaseguard
