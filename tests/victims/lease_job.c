/* A job as a lease authority meets them: three processes that hold device memory until they
 * are ended. The root holds 1 MiB and ends at SIGTERM; a child ignores SIGTERM and holds
 * 2 MiB; a daemon double-forked from another child (its parent exits at once, setsid) holds
 * 3 MiB. The root prints "ready" once all three hold their memory, then waits to be ended.
 * At each SIGUSR1 the root starts a helper that leaves the job's trees and never registers
 * (`sleep`, started by a shell without the preload that exits at once), which prints
 * "helper PID".
 * With SCALE, each holds SCALE times as much.
 * Usage: lease_job [SCALE] */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

static VICTIM_NOINLINE void hold(size_t bytes) {
  victim_primary_context();
  CUdeviceptr held;
  CHECK(cuMemAlloc_v2(&held, bytes));
}

static void wait_forever(int ready_fd) {
  (void)!write(ready_fd, "x", 1);
  close(ready_fd);
  for (;;) pause();
}

static void start_helper(void) {
  /* A shell without the preload, forked from here (and so registered at its fork), starts
   * the helper in a session of its own and exits: the helper, forked by the shell, never
   * registered, and its parents are gone. */
  const pid_t shell = fork();
  if (shell == 0) {
    unsetenv("LD_PRELOAD");
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execl("/bin/sh", "sh", "-c", "setsid /bin/sleep 1000 & echo helper $!", (char *)NULL);
    _exit(127);
  }
  waitpid(shell, NULL, 0);
}

int main(int argc, char **argv) {
  const size_t mib = (argc > 1 ? (size_t)atoi(argv[1]) : 1) << 20;
  int ready[2];
  if (pipe(ready) != 0) return 40;
  if (fork() == 0) { /* the child that ignores SIGTERM */
    signal(SIGTERM, SIG_IGN);
    close(ready[0]);
    hold(2 * mib);
    wait_forever(ready[1]);
  }
  const pid_t parent_of_daemon = fork();
  if (parent_of_daemon == 0) {
    if (fork() == 0) { /* the daemon: its parent exits, it goes on */
      setsid();
      close(ready[0]);
      hold(3 * mib);
      wait_forever(ready[1]);
    }
    _exit(0);
  }
  waitpid(parent_of_daemon, NULL, 0);
  close(ready[1]);
  hold(1 * mib);
  char byte;
  for (int joined = 0; joined < 2; ++joined)
    if (read(ready[0], &byte, 1) != 1) return 41;
  /* Blocked before "ready": a SIGUSR1 sent as soon as the test reads it must wait for sigwait,
   * not end the root by its default action (the test would wait for "helper" for ever). */
  sigset_t asked;
  sigemptyset(&asked);
  sigaddset(&asked, SIGUSR1);
  sigprocmask(SIG_BLOCK, &asked, NULL);
  printf("ready\n");
  fflush(stdout);
  for (int signal_number; sigwait(&asked, &signal_number) == 0;) start_helper();
  return 42;
}
