// Checks of the core's own invariants (mimalloc's mi_assert_internal is the model): compiled
// in where LEASEGUARD_ASSERTS is set (debug builds of the checked core, as the asan preset's),
// to nothing elsewhere. A failed one says which and where, and aborts: it is leaseguard's
// bug, found by its tests. The core built into the preload never has them: a program must
// not stop for leaseguard's sake.
#pragma once

namespace leaseguard::detail {
[[noreturn]] void assertion_failed(const char *condition, const char *file, int line) noexcept;
}

#if defined(LEASEGUARD_ASSERTS) && LEASEGUARD_ASSERTS
#define LG_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::leaseguard::detail::assertion_failed(#condition, __FILE__, __LINE__))
#else
#define LG_ASSERT(condition) static_cast<void>(0)
#endif
