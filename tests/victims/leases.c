/* Explicit leases through the C ABI: a request-scoped lease that leaks 111 bytes and is
 * ended by the program (leaseguard_lease_end must return 1), a nested lease on top of it,
 * and a lease entered on one thread only. */
#include <pthread.h>

#include "leaseguard/leaseguard.h"
#include "victim.h"

static VICTIM_NOINLINE void request_leak(void) {
  CUdeviceptr buffer, freed;
  CHECK(cuMemAlloc_v2(&buffer, 111));
  CHECK(cuMemAlloc_v2(&freed, 64));
  CHECK(cuMemFree_v2(freed));
}

static VICTIM_NOINLINE void inner_leak(void) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc_v2(&buffer, 222));
}

static leaseguard_lease_t g_thread_lease;
static CUcontext g_context;

static void *other_thread(void *unused) {
  (void)unused;
  CUdeviceptr buffer;
  CHECK(cuCtxSetCurrent(g_context));
  CHECK(cuMemAlloc_v2(&buffer, 333)); /* not entered on this thread: the process lease's */
  return NULL;
}

int main(void) {
  g_context = victim_primary_context();
  leaseguard_lease_t request = leaseguard_lease_begin("request", 0, LEASEGUARD_REPORT);
  if (request == 0 || leaseguard_lease_enter(request) != 0) return 10;
  request_leak();
  leaseguard_lease_t inner = leaseguard_lease_begin("inner", 0, LEASEGUARD_REPORT);
  if (leaseguard_lease_enter(inner) != 0) return 11;
  inner_leak();
  g_thread_lease = inner;
  pthread_t thread;
  pthread_create(&thread, NULL, other_thread, NULL);
  pthread_join(thread, NULL);
  if (leaseguard_lease_leave() != 0) return 12;
  if (leaseguard_lease_end(inner) != 1) return 13;
  if (leaseguard_lease_leave() != 0) return 14;
  int leaked = leaseguard_lease_end(request);
  if (leaked != 1) {
    fprintf(stderr, "request lease leaked %d, expected 1\n", leaked);
    return 15;
  }
  if (leaseguard_lease_end(request) != -1) return 16; /* already ended */
  if (leaseguard_lease_leave() != -1) return 17;      /* nothing entered */
  printf("leases done\n");
  return 0;
}
