/* SIGTERM and SIGINT under leaseguard. Usage: terminated handler | default | ignored | sigint
 *   handler: a graceful service: its SIGTERM handler (installed with sigaction) frees the
 *            buffer, and it exits 0: nothing leaked, and its leases end at exit.
 *   default: SIGTERM's default action: the process dies of it; what was live then (the
 *            buffer) is reported from the journal.
 *   ignored: SIGTERM is ignored: nothing happens, the program goes on and frees its buffer.
 *   sigint:  the same as default, for SIGINT (a ^C). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "leaseguard/annotate.h"
#include "victim.h"

static CUdeviceptr g_buffer;
static volatile sig_atomic_t g_handled = 0;

static void on_term(int signal_number) {
  (void)signal_number;
  cuMemFree_v2(g_buffer);
  g_handled = 1;
}

static VICTIM_NOINLINE void allocate_buffer(void) { CHECK(cuMemAlloc_v2(&g_buffer, 8888)); }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "handler";
  victim_primary_context();
  leaseguard_lease_t job = LEASEGUARD_LEASE_BEGIN("job", 0, LEASEGUARD_REPORT);
  LEASEGUARD_LEASE_ENTER(job);
  allocate_buffer();
  if (strcmp(mode, "handler") == 0) {
    struct sigaction action, seen;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_term;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGTERM, &action, NULL) != 0) return 10;
    /* The program sees its own disposition, not leaseguard's. */
    if (sigaction(SIGTERM, NULL, &seen) != 0 || seen.sa_handler != on_term) return 11;
    kill(getpid(), SIGTERM);
    if (!g_handled) return 12;
    printf("handler ran\n");
    return 0;
  }
  if (strcmp(mode, "ignored") == 0) {
    if (signal(SIGTERM, SIG_IGN) == SIG_ERR) return 13;
    kill(getpid(), SIGTERM);
    CHECK(cuMemFree_v2(g_buffer));
    LEASEGUARD_LEASE_LEAVE();
    LEASEGUARD_LEASE_END(job);
    printf("ignored\n");
    return 0;
  }
  fflush(stdout);
  kill(getpid(), strcmp(mode, "sigint") == 0 ? SIGINT : SIGTERM);
  return 14; /* not reached */
}
