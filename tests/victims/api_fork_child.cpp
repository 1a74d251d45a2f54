// The C++ API across fork (tests/integration/api_test.cpp). The parent's session holds a
// 3000-byte handle; the child (or, with `nofork`, the process itself) allocates 1000 bytes in
// that session, drops the handle without freeing it (a copy left on the heap, its count
// never falling to zero) and ends the session: end() says how many allocations it still held
// (the child's own, not the parent's inherited one), and the policy (reclaim) frees it. The
// parent then frees its handle and ends its session: 0 left.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <leaseguard/session.hpp>

__attribute__((noinline)) static void drop_a_handle(leaseguard::GpuSession &session) {
  new leaseguard::GpuMemHandle(session.mem_alloc(1000));  // never deleted: dropped, not freed
}

static int child_work(leaseguard::GpuSession &session) {
  drop_a_handle(session);
  const size_t left = session.end();
  std::printf("child end: %zu\n", left);
  return 0;
}

int main(int argc, char **argv) {
  const bool fork_child = !(argc > 1 && std::strcmp(argv[1], "nofork") == 0);
  leaseguard::GpuSession session({.name = "parent"});
  leaseguard::GpuMemHandle kept = session.mem_alloc(3000);
  if (!fork_child) return child_work(session);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // The child's own session: as a program after fork uses the one it inherited.
    std::exit(child_work(session));
  }
  int status = 0;
  waitpid(child, &status, 0);
  session.mem_free(kept);
  std::printf("parent end: %zu\n", session.end());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
