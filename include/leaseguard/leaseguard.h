/* leaseguard C ABI: leases a program opens and ends itself.
 *
 * A lease owns the device memory allocated while it is entered; when it ends, everything
 * it still owns is reported as leaked. These functions are exported by
 * libleaseguard_preload.so and by libleaseguard_api.so, which answer alike. Where leaseguard
 * records nothing (LEASEGUARD_DISABLE=1, a setuid program), every call is a no-op returning
 * 0. To mark leases without linking leaseguard, include <leaseguard/annotate.h> instead: its
 * weak declarations make every call a no-op returning 0 when the preload is absent.
 *
 * None of these is async-signal-safe: never call one from a signal handler. Each takes locks
 * that the code the signal interrupted may hold (inside a hooked allocation, or inside another
 * of these calls), and the handler would then wait for ever, as malloc from a handler may. */
#ifndef LEASEGUARD_LEASEGUARD_H
#define LEASEGUARD_LEASEGUARD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t leaseguard_lease_t; /* 0 means "no lease" */

/* LEASEGUARD_CLASSIFY_AT_END, or'ed into on_expiry: the lease's end is classified (what the
 * program still reaches is reachable, not leaked, and not counted by leaseguard_lease_end)
 * whatever --reachability says, unless it is off. The code that ends such a lease is taken
 * to hold nothing of it in its frames (a test's lease, ended once the test returned): that
 * thread's stack is not read, its thread-locals are. Costs a scan only where the lease still
 * owns something at its end. A leaseguard that does not know it reads the policy alone. */
enum { LEASEGUARD_REPORT = 0, LEASEGUARD_RECLAIM = 1, LEASEGUARD_ABORT = 2, LEASEGUARD_CLASSIFY_AT_END = 0x100 };

/* Begins a lease named `name` (NULL: "lease"). ttl_ms > 0 gives it a deadline; on_expiry
 * says what happens then (a policy, with LEASEGUARD_CLASSIFY_AT_END if wanted). Returns the
 * lease, or 0 if leaseguard is not recording. */
leaseguard_lease_t leaseguard_lease_begin(const char *name, uint64_t ttl_ms, int on_expiry);

/* Ends `lease` now. Returns the number of its allocations still live and lost (leaked; where
 * the lease's end is classified, those the program still reaches are reachable, not counted),
 * or -1 if the lease is unknown or already ended. */
int leaseguard_lease_end(leaseguard_lease_t lease);

/* The calling thread's new allocations go to `lease` until leaseguard_lease_leave().
 * Enters nest. Returns 0, or -1 if the lease is unknown or ended. */
int leaseguard_lease_enter(leaseguard_lease_t lease);

/* Undoes the innermost leaseguard_lease_enter() of this thread. Returns 0, or -1 if none. */
int leaseguard_lease_leave(void);

/* A live check: classifies every live device allocation now, as the exit does, while the
 * program runs (its other threads are held for the scan only), and records in the journal what
 * was lost and what still reachable at this moment; nothing ends and nothing is freed, as
 * LeakSanitizer's __lsan_do_recoverable_leak_check. `leaseguard report` lists each process's
 * checks. Returns 0, or -1 where nothing could be classified (--reachability=off, leaseguard
 * not recording, the process exiting). Not async-signal-safe: never from a signal handler (it
 * takes locks the interrupted code may hold), as no classification is. */
int leaseguard_check(void);

#ifdef __cplusplus
}
#endif

#endif /* LEASEGUARD_LEASEGUARD_H */
