/* Outlives its process lease's time-to-live or deadline (run with --ttl 1s, or a
 * LEASEGUARD_DEADLINE a little ahead): the 6000-byte allocation made before expiry is
 * reported as leaked at expiry; it is freed afterwards (a late free). The 7000-byte
 * allocation made after expiry is still live at exit.
 *
 * It waits for the expiry itself, not for a time: it asks the preload's core for the process
 * lease's state (core/session/core_link.h, as the C++ API does) until it has ended. Exits 77 where the
 * lease had ended before its first allocation (a machine too loaded to start it within the
 * time-to-live, or a deadline already past): the run cannot show what the test looks for. */
#include <dlfcn.h>
#include <time.h>

#include "core_link.h"
#include "victim.h"

namespace {

constexpr uint64_t kProcessLease = 1;
constexpr int kLeaseOpen = 0;  // leaseguard::LeaseState::Open

void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

const leaseguard_core_link *core_link() {
  auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  return link_of != nullptr ? link_of() : nullptr;
}

}  // namespace

// C names: the tests find them by name in the leaks' stacks.
extern "C" VICTIM_NOINLINE CUdeviceptr allocate_before_expiry() {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 6000));
  return buffer;
}

extern "C" VICTIM_NOINLINE void allocate_after_expiry() {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 7000));
}

int main() {
  victim_primary_context();
  CUdeviceptr early = allocate_before_expiry();
  const leaseguard_core_link *link = core_link();
  if (link == nullptr) {
    fprintf(stderr, "ttl_expiry: no leaseguard core to ask about the lease\n");
    return 4;
  }
  if (link->lease_state(kProcessLease) != kLeaseOpen) {
    fprintf(stderr, "ttl_expiry: the process lease ended before the first allocation\n");
    return 77;
  }
  while (link->lease_state(kProcessLease) == kLeaseOpen) sleep_ms(1);
  CHECK(cuMemFree_v2(early));
  allocate_after_expiry();
  printf("ttl_expiry done\n");
  return 0;
}
