// How the C++ API reaches the process's one core.
//
// The preload exports leaseguard_core_link_v1(); when it is loaded, the API records into the
// preload's core through this table, so an allocation is recorded once and leases mean the
// same on both paths. Without the preload, the API library runs a core of its own behind the
// same table. Plain C types only: the preload and the API may come from different builds; a
// newer table only grows (`size` says how much of it the provider filled).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct leaseguard_alloc_event {
  uint16_t api;  // leaseguard::Api
  uint8_t kind;  // leaseguard::Kind
  int32_t device;
  uint64_t value;
  uint64_t bytes;
  uint64_t context;
  uint64_t lease;  // 0: the calling thread's current lease
};

struct leaseguard_core_link {
  uint32_t version;  // 1
  uint32_t size;     // sizeof the provider's table
  // The driver's own `name` from the library `driver_handle` (a dlopen handle), never a
  // leaseguard hook; remembered, so that reclaiming what the API allocated reaches the same
  // driver. NULL if the library has no such function.
  void *(*real_function)(void *driver_handle, const char *name);
  // With no core recording, lease_begin returns 0 and lease_end, lease_enter and
  // lease_leave return 0: no-ops (c_abi.h).
  // `policy` may carry kLeaseClassifyAtEnd (the C ABI's LEASEGUARD_CLASSIFY_AT_END).
  uint64_t (*lease_begin)(const char *name, uint64_t ttl_ms, int policy);  // 0 if not recording
  int (*lease_end)(uint64_t lease);                                        // leaked, or -1
  int (*lease_state)(uint64_t lease);                                      // leaseguard::LeaseState
  void (*on_alloc)(const leaseguard_alloc_event *event);
  int (*on_free)(uint16_t api, uint64_t value);  // 0: free it, 1: unknown, free it, 2: reclaimed, do not
  // Frames in [begin, end) (the API library) are dropped from the top of recorded stacks.
  void (*exclude_code)(uint64_t begin, uint64_t end);
  // on_free for a handle's last drop: after its lease reclaimed the memory this is expected,
  // and not reported as a late free.
  int (*on_owner_drop)(uint16_t api, uint64_t value);
  // on_alloc, told where the program's stack begins: the return address into the program
  // and its stack and frame pointers there (the API's caller, read from the API's own
  // frame). The walk then starts there instead of stepping through the API's frames, and a
  // thread allocating from one place again checks its last walk instead of walking. Not in
  // tables before it (see leaseguard_core_link_has).
  void (*on_alloc_from)(const leaseguard_alloc_event *event, uint64_t caller_pc, uint64_t caller_sp,
                        uint64_t caller_bp);
  // The calling thread's new allocations go to `lease` until lease_leave (leaseguard.h's
  // leaseguard_lease_enter and _leave, which the API library exports too). Not in tables
  // before it.
  int (*lease_enter)(uint64_t lease);  // 0, or -1 if the lease is unknown or ended
  int (*lease_leave)(void);            // 0, or -1 if the thread entered none
  // A live check now (leaseguard.h's leaseguard_check): 0, or -1 where nothing could be
  // classified. Not in tables before it.
  int (*check)(void);
};

// The first tables had every member up to on_owner_drop: a provider's table is accepted from
// that size on, and a later member used only where the provider's size covers it.
#define LEASEGUARD_CORE_LINK_FIRST_SIZE (offsetof(leaseguard_core_link, on_owner_drop) + sizeof(void *))
#define leaseguard_core_link_has(link, member) \
  ((link).size >= offsetof(leaseguard_core_link, member) + sizeof((link).member) && (link).member != NULL)

// Exported by libleaseguard_preload.so; NULL when it records nothing (disabled, setuid).
typedef const leaseguard_core_link *(*leaseguard_core_link_fn)(void);
}

namespace leaseguard {
// Or'ed into lease_begin's policy: the lease's end is classified whatever the reachability
// mode (Lease::classify_at_end); the C ABI's LEASEGUARD_CLASSIFY_AT_END.
inline constexpr int kLeaseClassifyAtEnd = 0x100;

// The table over this process's core (Tracker::instance(); recording nothing where there is
// none), with the front end's way to reach the driver's own functions: the one adapter the
// preload exports and the C++ API library uses when it runs alone (core_link.cpp).
leaseguard_core_link core_link(void *(*real_function)(void *driver_handle, const char *name)) noexcept;
}  // namespace leaseguard
