/* Live checks (leaseguard_check) while the program runs: 3 buffers kept in a global (3000 to
 * 3002 bytes) and one more (4000) that it frees right after the first check, 2 dropped
 * (1000, 1001), a check; 3 more dropped (1002 to 1004), a second check;
 * then exit with all of them still allocated. Meanwhile a worker thread waits in read() on a
 * pipe the main thread writes only after the checks: its read must return the byte, never
 * EINTR, though the checks held the thread (tests/integration/live_check_test.cpp).
 * Prints each check's result and the worker's read. Other modes: "lease", "no_fds" and "fork"
 * (below). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <leaseguard/leaseguard.h>

#include "victim.h"

static CUdeviceptr g_kept[3];
static CUdeviceptr g_freed_after_check;
static int g_pipe[2];

static VICTIM_NOINLINE void drop_buffers(int first, int count) {
  for (int i = first; i < first + count; ++i) {
    CUdeviceptr dropped;
    CHECK(cuMemAlloc_v2(&dropped, 1000 + i));
  }
}

static void *worker(void *unused) {
  (void)unused;
  char byte = 0;
  ssize_t got = read(g_pipe[0], &byte, 1);
  printf("worker read %zd%s\n", got, got < 0 && errno == EINTR ? " (EINTR)" : "");
  return NULL;
}

/* "lease": a lease the program begins, enters and ends right after dropping 2 buffers (1000,
 * 1001) and keeping one (3000); run with --reachability=leases, its end is classified from
 * this thread, which prints what leaseguard_lease_end counted lost. */
static int lease_mode(void) {
  leaseguard_lease_t lease = leaseguard_lease_begin("request", 0, LEASEGUARD_REPORT);
  if (lease == 0 || leaseguard_lease_enter(lease) != 0) return 7;
  CHECK(cuMemAlloc_v2(&g_kept[0], 3000));
  drop_buffers(0, 2);
  printf("lease end: %d\n", leaseguard_lease_end(lease));
  return 0;
}

/* "no_fds": a check made while every descriptor the program may open is in use (3000 kept,
 * 1000 dropped): the world stop cannot list the threads, so the check classifies nothing and
 * says why. The descriptors are closed again before the exit, whose classification reads all. */
static int no_fds_mode(void) {
  CHECK(cuMemAlloc_v2(&g_kept[0], 3000));
  drop_buffers(0, 1);
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max < 256) return 77;
  limit.rlim_cur = 256;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 8;
  int opened[256];
  int count = 0;
  for (int fd; count < 256 && (fd = open("/dev/null", O_RDONLY)) >= 0;) opened[count++] = fd;
  int status = leaseguard_check();
  while (count > 0) close(opened[--count]);
  printf("check: %d\n", status);
  return 0;
}

/* "fork": children forked while another thread checks, each ending with exit() (whose
 * classification takes its turn as a check does; a forked child cannot use its parent's CUDA
 * context, so it allocates nothing). A child forked while the checking thread held the turn
 * must still exit: prints how many did; one still running after a minute is named and
 * killed, and no more are forked (exit status 9). The 64 MiB kept buffer lengthens each
 * check's reading before its stop, when a fork can happen. */
static volatile int g_stop_checking;

static void *keep_checking(void *unused) {
  (void)unused;
  while (!g_stop_checking) leaseguard_check();
  return NULL;
}

static int wait_for_child(pid_t child) {
  for (int tenths = 0; tenths < 600; ++tenths) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    struct timespec tenth = {0, 100 * 1000 * 1000};
    nanosleep(&tenth, NULL);
  }
  printf("child %d still running\n", (int)child);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}

static int fork_mode(void) {
  CHECK(cuMemAlloc_v2(&g_kept[0], 64u << 20));
  pthread_t checker;
  if (pthread_create(&checker, NULL, keep_checking, NULL) != 0) return 5;
  enum { kChildren = 150 };
  int exited = 0;
  for (int i = 0; i < kChildren; ++i) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 6;
    if (child == 0) exit(0);
    if (!wait_for_child(child)) break;
    ++exited;
  }
  g_stop_checking = 1;
  pthread_join(checker, NULL);
  printf("%d of %d children exited\n", exited, (int)kChildren);
  return exited == kChildren ? 0 : 9;
}

int main(int argc, char **argv) {
  victim_primary_context();
  if (argc > 1 && strcmp(argv[1], "lease") == 0) return lease_mode();
  if (argc > 1 && strcmp(argv[1], "no_fds") == 0) return no_fds_mode();
  if (argc > 1 && strcmp(argv[1], "fork") == 0) return fork_mode();
  if (pipe(g_pipe) != 0) return 4;
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 5;
  for (int i = 0; i < 3; ++i) CHECK(cuMemAlloc_v2(&g_kept[i], 3000 + i));
  CHECK(cuMemAlloc_v2(&g_freed_after_check, 4000));
  drop_buffers(0, 2);
  printf("check 1: %d\n", leaseguard_check());
  CHECK(cuMemFree_v2(g_freed_after_check));
  g_freed_after_check = 0; /* its address may be handed out again: no dangling copy to hold that */
  drop_buffers(2, 3);
  printf("check 2: %d\n", leaseguard_check());
  fflush(stdout);
  if (write(g_pipe[1], "x", 1) != 1) return 6;
  pthread_join(thread, NULL);
  return 0;
}
