// Implementation of the event clock (see event_clock.h for why it is the coarse one).
#include "event_clock.h"

namespace leaseguard {

uint32_t event_clock_resolution_ns() noexcept {
  timespec resolution{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) != 0 || resolution.tv_sec != 0) return 0;
  return static_cast<uint32_t>(resolution.tv_nsec);
}

uint64_t monotonic_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace leaseguard
