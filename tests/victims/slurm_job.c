/* A Slurm job's program, one mode a job (tests/integration/slurm_test.cpp):
 *   clean         holds 1 MiB and frees it;
 *   leak          drops 5403 bytes (lost) and keeps 1 MiB in a global (held on purpose);
 *   orphan FILE   leaves a process in a session of its own (double-forked: its parent is
 *                 gone) holding 3 MiB, and exits once the orphan holds it; the orphan writes
 *                 its pid to FILE, then waits to be ended.
 * Usage: slurm_job clean | leak | orphan FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

CUdeviceptr g_slurm_job_kept; /* not static: the store must stay for the scan to find */

static VICTIM_NOINLINE CUdeviceptr allocate(size_t bytes) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
  return pointer;
}

static VICTIM_NOINLINE void drop(size_t bytes) { (void)allocate(bytes); }

/* The orphan: its own session, its parent gone; holds 3 MiB, says its pid, waits. */
static void become_orphan(const char *pid_file, int ready_fd) {
  setsid();
  if (fork() != 0) _exit(0);
  victim_primary_context();
  (void)allocate(3u << 20);
  char text[32];
  const int length = snprintf(text, sizeof text, "%d\n", (int)getpid());
  const int fd = open(pid_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, text, (size_t)length) != length) _exit(4);
  close(fd);
  (void)!write(ready_fd, "x", 1);
  close(ready_fd);
  for (;;) pause();
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "clean") == 0) {
    victim_primary_context();
    CHECK(cuMemFree_v2(allocate(1u << 20)));
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "leak") == 0) {
    victim_primary_context();
    g_slurm_job_kept = allocate(1u << 20);
    drop(5403);
    return 0;
  }
  if (argc > 2 && strcmp(argv[1], "orphan") == 0) {
    int ready[2];
    if (pipe(ready) != 0) return 5;
    const pid_t child = fork();
    if (child == 0) {
      close(ready[0]);
      become_orphan(argv[2], ready[1]);
    }
    close(ready[1]);
    char byte;
    if (read(ready[0], &byte, 1) != 1) return 6; /* the orphan holds its memory */
    waitpid(child, NULL, 0);
    return 0;
  }
  fprintf(stderr, "usage: slurm_job clean | leak | orphan FILE\n");
  return 2;
}
