/* A tree of 50 processes made every way a program makes them: fork (the child keeps
 * running this image), posix_spawn and vfork + exec (a fresh image of this program). The
 * root starts 7 nodes; each node starts 6 leaves. Every process leaks exactly one
 * allocation of 2000 + its id bytes (the root is id 0), so the test can tell that each
 * process reported its own leak and nobody else's. The root also runs a thread that exits
 * with a live allocation (3000 bytes) and frees, on the main thread, one that another thread
 * made. Usage: process_tree [node ID | leaf ID] (no argument: the root). */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

extern char **environ;

enum { kNodes = 7, kLeavesPerNode = 6 };

static char g_self[4096];

static VICTIM_NOINLINE void leak_for(int id) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 2000 + (size_t)id));
}

static void run_as(const char *role, int id);

/* Starts process `id` as `role` by one of the three ways, chosen by id. */
static pid_t start(const char *role, int id) {
  char number[16];
  snprintf(number, sizeof number, "%d", id);
  char *argv[] = {g_self, (char *)role, number, NULL};
  pid_t child = -1;
  switch (id % 3) {
    case 0:
      child = fork();
      if (child == 0) {
        run_as(role, id);
        exit(0);
      }
      break;
    case 1:
      if (posix_spawn(&child, g_self, NULL, NULL, argv, environ) != 0) exit(30);
      break;
    default:
      child = vfork();
      if (child == 0) {
        execv(g_self, argv);
        _exit(31);
      }
  }
  if (child < 0) exit(32);
  return child;
}

static void wait_all(pid_t *children, int count) {
  for (int i = 0; i < count; ++i) {
    int status = 0;
    if (waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(33);
  }
}

static void run_as(const char *role, int id) {
  victim_primary_context();
  leak_for(id);
  if (strcmp(role, "node") != 0) return;
  pid_t leaves[kLeavesPerNode];
  for (int j = 0; j < kLeavesPerNode; ++j) leaves[j] = start("leaf", kNodes + (id - 1) * kLeavesPerNode + j + 1);
  wait_all(leaves, kLeavesPerNode);
}

static CUcontext g_context;

static VICTIM_NOINLINE void *thread_leaks_and_exits(void *freed_elsewhere) {
  CHECK(cuCtxSetCurrent(g_context));
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 3000));
  CHECK(cuMemAlloc_v2((CUdeviceptr *)freed_elsewhere, 3100));
  return NULL;
}

int main(int argc, char **argv) {
  ssize_t length = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (length <= 0) return 2;
  g_self[length] = '\0';
  if (argc == 3) {
    run_as(argv[1], atoi(argv[2]));
    return 0;
  }
  g_context = victim_primary_context();
  leak_for(0);
  pthread_t thread;
  CUdeviceptr from_thread = 0;
  if (pthread_create(&thread, NULL, thread_leaks_and_exits, &from_thread) != 0 || pthread_join(thread, NULL) != 0)
    return 3;
  CHECK(cuMemFree_v2(from_thread)); /* freed on another thread than its allocation's */
  pid_t nodes[kNodes];
  for (int i = 0; i < kNodes; ++i) nodes[i] = start("node", i + 1);
  wait_all(nodes, kNodes);
  printf("process_tree done\n");
  return 0;
}
