/* A process lease that ends by its time-to-live (run with --ttl) while the program still
 * holds device memory: 20 buffers dropped (sizes 1000 to 1019 bytes, nothing points to
 * them) and 6 kept in a global (sizes 2000 to 2005). It waits until the lease has ended,
 * then prints `ended` and exits with the kept buffers still allocated. Every allocation
 * must be accounted once: the dropped ones lost, the kept ones reachable, at the expiry
 * (tests/integration/lease_accounting_test.cpp).
 *
 * It waits for the expiry itself, not for a time: it asks the preload's core for the process
 * lease's state (core/session/core_link.h), which answers once the expiry is settled. Exits
 * 77 where the lease had ended before the last allocation (a machine too loaded to make them
 * within the time-to-live).
 *
 * With `static-end`, the buffers are allocated in a scope lease instead, which the destructor
 * of a global ends: after the classification at exit, while exit handlers run. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_link.h"
#include "leaseguard/annotate.h"
#include "victim.h"

namespace {

constexpr uint64_t kProcessLease = 1;
constexpr int kLeaseOpen = 0;  // leaseguard::LeaseState::Open

CUdeviceptr g_kept[6];

void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

// Ends the scope lease from a static destructor (constructed before main, so destroyed after
// leaseguard's exit classification, which runs before every static destructor).
struct EndsAtExit {
  leaseguard_lease_t lease = 0;
  ~EndsAtExit() {
    if (lease != 0) LEASEGUARD_LEASE_END(lease);
  }
} g_ends_at_exit;

}  // namespace

extern "C" VICTIM_NOINLINE void drop_buffers() {
  for (int i = 0; i < 20; ++i) {
    CUdeviceptr buffer;
    CHECK(cuMemAlloc_v2(&buffer, 1000 + i));
  }
}

extern "C" VICTIM_NOINLINE void keep_buffers() {
  for (int i = 0; i < 6; ++i) CHECK(cuMemAlloc_v2(&g_kept[i], 2000 + i));
}

int main(int argc, char **argv) {
  victim_primary_context();
  auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  const leaseguard_core_link *link = link_of != nullptr ? link_of() : nullptr;
  if (link == nullptr) {
    fprintf(stderr, "lease_accounting: no leaseguard core to ask about the lease\n");
    return 4;
  }
  if (argc > 1 && strcmp(argv[1], "static-end") == 0) {
    g_ends_at_exit.lease = LEASEGUARD_LEASE_BEGIN("scope", 0, LEASEGUARD_REPORT);
    if (g_ends_at_exit.lease == 0 || LEASEGUARD_LEASE_ENTER(g_ends_at_exit.lease) != 0) return 5;
    drop_buffers();
    keep_buffers();
    LEASEGUARD_LEASE_LEAVE();
    return 0;
  }
  drop_buffers();
  keep_buffers();
  if (link->lease_state(kProcessLease) != kLeaseOpen) {
    fprintf(stderr, "lease_accounting: the process lease ended before the last allocation\n");
    return 77;
  }
  if (argc > 1) {  // exits after ARGV[1] ms, whatever the lease's state: racing its expiry
    // printf's first call binds it (lazily, through the loader's resolver, whose frame of
    // a kilobyte and more is laid over the stack drop_buffers used and written only in part):
    // made here, not in the race, where a scan that stopped the thread inside the resolver
    // would read the copies of dropped pointers under it, as any conservative scan would.
    printf("sleeping\n");
    fflush(stdout);
    sleep_ms(atol(argv[1]));
    printf("slept\n");
    return 0;
  }
  while (link->lease_state(kProcessLease) == kLeaseOpen) sleep_ms(1);
  printf("ended\n");
  return 0;
}
