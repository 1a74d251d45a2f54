/* Lease annotations that cost nothing without leaseguard.
 *
 * The same functions as <leaseguard/leaseguard.h>, declared weak: a program built with this
 * header needs no leaseguard library at link time. Under the preload the calls reach it;
 * without it each LEASEGUARD_* macro is a no-op that yields 0. */
#ifndef LEASEGUARD_ANNOTATE_H
#define LEASEGUARD_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t leaseguard_lease_t;
/* LEASEGUARD_CLASSIFY_AT_END is or'ed into on_expiry: see <leaseguard/leaseguard.h>. */
enum { LEASEGUARD_REPORT = 0, LEASEGUARD_RECLAIM = 1, LEASEGUARD_ABORT = 2, LEASEGUARD_CLASSIFY_AT_END = 0x100 };

leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms, int on_expiry) __attribute__((weak));
int leaseguard_lease_end(leaseguard_lease_t lease) __attribute__((weak));
int leaseguard_lease_enter(leaseguard_lease_t lease) __attribute__((weak));
int leaseguard_lease_leave(void) __attribute__((weak));
int leaseguard_check(void) __attribute__((weak));

#define LEASEGUARD_LEASE_BEGIN(name, ttl_ms, on_expiry) \
  (leaseguard_lease_begin ? leaseguard_lease_begin((name), (ttl_ms), (on_expiry)) : (leaseguard_lease_t)0)
#define LEASEGUARD_LEASE_END(lease) (leaseguard_lease_end ? leaseguard_lease_end(lease) : 0)
#define LEASEGUARD_LEASE_ENTER(lease) (leaseguard_lease_enter ? leaseguard_lease_enter(lease) : 0)
#define LEASEGUARD_LEASE_LEAVE() (leaseguard_lease_leave ? leaseguard_lease_leave() : 0)
/* -1 where leaseguard is absent: no check was made. */
#define LEASEGUARD_CHECK() (leaseguard_check ? leaseguard_check() : -1)

#ifdef __cplusplus
}
#endif

#endif /* LEASEGUARD_ANNOTATE_H */
