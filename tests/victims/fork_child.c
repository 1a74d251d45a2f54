/* A leak in the parent and a different one in a forked child. The child's report must hold
 * only its own leak (4444 bytes), the parent's only its own (3333 bytes); a grandchild made
 * through exec (argument "exec") leaks 5555 bytes from a fresh image. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

static VICTIM_NOINLINE void parent_leak(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 3333));
}

static VICTIM_NOINLINE void child_leak(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 4444));
}

static VICTIM_NOINLINE void exec_leak(void) {
  CUdeviceptr leaked;
  CHECK(cuMemAlloc_v2(&leaked, 5555));
}

int main(int argc, char **argv) {
  victim_primary_context();
  if (argc > 1 && strcmp(argv[1], "exec") == 0) {
    exec_leak();
    return 0;
  }
  parent_leak();
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    child_leak();
    /* and a grandchild that execs this program afresh */
    pid_t grandchild = fork();
    if (grandchild == 0) {
      execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
      _exit(127);
    }
    int status;
    waitpid(grandchild, &status, 0);
    exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  int status;
  waitpid(child, &status, 0);
  printf("fork_child done\n");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
