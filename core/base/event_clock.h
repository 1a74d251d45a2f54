// The time stamps of allocation and free records: CLOCK_MONOTONIC_COARSE, the monotonic
// clock as of the kernel's last tick.
//
// Why: every allocation takes a time stamp (its age in a leak report, the report's
// timelines), and a fine one cost more than anything else in recording a pair on virtual
// machines, where reading the time stamp counter takes 15-25 ns: ~25 ns of a ~110 ns pair
// in bench/compare (bench/README.md, "Where a pair's cost goes"). The coarse clock is a read
// of the kernel's last tick through the vDSO (~6 ns there), never a system call.
//
// Except where it is one: gVisor's vDSO serves only CLOCK_MONOTONIC and CLOCK_REALTIME and
// sends every other clock to its kernel, a system call of a microsecond or more on every
// allocation. choose_event_clock measures both once per process and takes CLOCK_MONOTONIC
// where the coarse clock is that costly.
//
// What it costs the report: an event's time is the tick it fell in, up to one tick
// (event_clock_resolution_ns: 4 ms at HZ=250, 1 ms at HZ=1000) before the call, the grain
// of heaptrack's timer. Order never comes from these times: the journal orders records by
// slot. They share CLOCK_MONOTONIC's epoch, so they compare with monotonic_ns(), which is
// never earlier. Leases, deadlines and the journal's header keep the fine clock.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace leaseguard {

namespace detail {
// The clock event_clock_ns reads (choose_event_clock).
extern std::atomic<clockid_t> g_event_clock;

inline uint64_t nanoseconds_of(const timespec &time) noexcept {
  return static_cast<uint64_t>(time.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(time.tv_nsec);
}
}  // namespace detail

// Inline: every allocation asks.
inline uint64_t event_clock_ns() noexcept {
  timespec now;
  clock_gettime(detail::g_event_clock.load(std::memory_order_relaxed), &now);
  return detail::nanoseconds_of(now);
}

// Keeps the coarse clock unless reading it here is a system call (see above); measured once
// per process, the first time it is called (each tracker calls it as it starts).
void choose_event_clock() noexcept;
// The rule choose_event_clock applies to what a read of each clock cost, in nanoseconds.
bool coarse_clock_is_cheap_enough(double coarse_read_ns, double fine_read_ns) noexcept;

// The event clock's tick, in nanoseconds (what the journal header records): 1 when it is
// CLOCK_MONOTONIC.
uint32_t event_clock_resolution_ns() noexcept;

// CLOCK_MONOTONIC itself, for what is rare or must be exact (leases, deadlines, headers).
uint64_t monotonic_ns() noexcept;

}  // namespace leaseguard
