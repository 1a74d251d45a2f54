/* A job whose lease's teardown asks it to give its memory back (`lease start --on-expiry
 * reclaim`): the root holds 1 MiB and a forked child 2 MiB; the root prints "ready" once
 * both hold it. Each then waits for its process lease to end (it asks the preload's core,
 * core/session/core_link.h, as the C++ API does: an event, not a time), checks with the driver that
 * the memory it held is free again, frees it itself (a late free, kept from the driver), and
 * prints "PID gave back BYTES". Exits 0 if both saw their memory given back, 5 if not.
 * Usage: authority_reclaim */
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core_link.h"
#include "victim.h"

namespace {

constexpr uint64_t kProcessLease = 1;
constexpr int kLeaseOpen = 0;  // leaseguard::LeaseState::Open

const leaseguard_core_link *core_link() {
  auto link_of = reinterpret_cast<leaseguard_core_link_fn>(dlsym(RTLD_DEFAULT, "leaseguard_core_link_v1"));
  return link_of != nullptr ? link_of() : nullptr;
}

size_t free_bytes() {
  size_t free = 0, total = 0;
  CHECK(cuMemGetInfo_v2(&free, &total));
  return free;
}

struct Held {
  CUdeviceptr address;
  size_t bytes;
  size_t free_before;
};

Held hold(size_t bytes) {
  victim_primary_context();
  Held held{0, bytes, free_bytes()};
  CHECK(cuMemAlloc_v2(&held.address, bytes));
  return held;
}

// Waits for the process lease's end; 0 if the memory came back to the device.
int wait_until_given_back(const Held &held) {
  const leaseguard_core_link *link = core_link();
  if (link == nullptr) {
    fprintf(stderr, "authority_reclaim: no leaseguard core to ask about the lease\n");
    return 4;
  }
  while (link->lease_state(kProcessLease) == kLeaseOpen) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, nullptr);
  }
  const bool given_back = free_bytes() == held.free_before;
  CHECK(cuMemFree_v2(held.address));  // late: leaseguard took it back, so the driver never sees this
  if (given_back) printf("%d gave back %zu\n", (int)getpid(), held.bytes);
  fflush(stdout);
  return given_back ? 0 : 5;
}

}  // namespace

int main() {
  int ready[2];
  if (pipe(ready) != 0) return 40;
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    const Held held = hold(2u << 20);
    (void)!write(ready[1], "x", 1);
    close(ready[1]);
    exit(wait_until_given_back(held));  // exit, not _exit: its journal says how it ended
  }
  close(ready[1]);
  const Held held = hold(1u << 20);
  char byte;
  if (read(ready[0], &byte, 1) != 1) return 41;
  printf("ready\n");
  fflush(stdout);
  const int mine = wait_until_given_back(held);
  int status = 0;
  if (waitpid(child, &status, 0) != child) return 42;
  return mine != 0 ? mine : WIFEXITED(status) ? WEXITSTATUS(status) : 6;
}
