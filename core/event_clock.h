// The time stamps of allocation and free records: CLOCK_MONOTONIC nanoseconds, read for a
// fraction of clock_gettime's cost.
//
// Why: two time stamps per allocation + free pair at ~27 ns each (clock_gettime through the
// vDSO on kvm-clock) were a fifth of what recording a pair cost. Each thread anchors the
// time stamp counter to clock_gettime and interpolates from its anchor for up to a
// millisecond, with a counter frequency learned from the anchors themselves; past that, or
// without an invariant time stamp counter, it asks clock_gettime. Interpolated times are
// within a few microseconds of the clock (a millisecond at the learned frequency's error)
// and never go backwards on one thread.
#pragma once

#include <cstdint>

namespace leaseguard {

uint64_t event_clock_ns() noexcept;

// CLOCK_MONOTONIC itself, for what is rare or must be exact (leases, deadlines, headers).
uint64_t monotonic_ns() noexcept;

}  // namespace leaseguard
