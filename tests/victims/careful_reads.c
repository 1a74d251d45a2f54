/* Programs whose memory the classification must read without touching what it may not: each
 * must go on exactly as without leaseguard (tests/integration/careful_reads_test.cpp;
 * docs/reliability.md lists each):
 *   registered_unmapped  registers host memory with cuMemHostRegister, then munmaps it without
 *                        unregistering (and reserves the range again, PROT_NONE, so that nothing
 *                        else is mapped there); drops 7701 and exits
 *   guard_block          keeps a posix_memalign'd block with a PROT_NONE guard page in its middle
 *                        (a coroutine stack) in a global, 7801 held in its first page; drops 7802
 *   guard_install        guards a page of its own mapping with MADV_GUARD_INSTALL (maps still
 *                        shows it rw-p); holds 7901 in the page before; drops 7902
 *   userfaultfd          a mapping served by its own userfaultfd thread, one page of it touched
 *                        and holding 8001, in a global; drops 8002. Exits 77 without userfaultfd
 *   sparse_ring          a 256 MiB MAP_SHARED | MAP_NORESERVE ring in a global, one page touched
 *                        and holding 8101; a lease ends (classified: --reachability leases) with
 *                        8102 dropped; prints whether its RssShmem grew past 16 MiB
 *   fresh_device         200 times: a device buffer A, a host block of the size the simulator takes
 *                        for the next one filled with A's address and freed, a device buffer B;
 *                        every buffer dropped, none written (the simulator's device memory
 *                        lives in the host heap: B would hold A's address, left there)
 *   siblings             a 1 GiB private MAP_NORESERVE mapping with one page touched, a page sealed
 *                        with mseal (where the kernel has it) holding 8201, a transparent huge
 *                        page region holding 8202, all in globals; a lease ends (classified)
 *                        with 8203 dropped; prints whether its RssAnon grew past 64 MiB */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <leaseguard/annotate.h>

#include "victim.h"

enum { kPage = 4096 };

static VICTIM_NOINLINE void leak(size_t bytes) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
}

static CUdeviceptr allocate(size_t bytes) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
  return pointer;
}

__attribute__((used)) static void *volatile g_memory;

static void registered_unmapped(void) {
  void *memory = mmap(NULL, 16 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) exit(10);
  memset(memory, 1, 16 * kPage);
  CHECK(cuMemHostRegister_v2(memory, 16 * kPage, 0));
  g_memory = memory;
  munmap(memory, 16 * kPage); /* never unregistered: a bug, and an ordinary one */
  /* The range stays reserved, as an allocator that decommits keeps it: nothing else of the
   * process's is mapped there by chance, where the scan could read it. */
  if (mmap(memory, 16 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) !=
      memory)
    exit(12);
  leak(7701);
  printf("exiting\n");
}

static void guard_block(void) {
  void *block = NULL;
  if (posix_memalign(&block, kPage, 3 * kPage) != 0) exit(10);
  memset(block, 0, 3 * kPage);
  ((CUdeviceptr *)block)[0] = allocate(7801);
  if (mprotect((char *)block + kPage, kPage, PROT_NONE) != 0) exit(11);
  g_memory = block;
  leak(7802);
  printf("exiting\n");
}

static void guard_install(void) {
  char *memory = mmap(NULL, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) exit(10);
  memset(memory, 0, 3 * kPage);
  ((CUdeviceptr *)memory)[0] = allocate(7901);
  const int kGuardInstall = 102; /* MADV_GUARD_INSTALL, Linux 6.13 */
  const int guarded = madvise(memory + kPage, kPage, kGuardInstall) == 0;
  g_memory = memory;
  leak(7902);
  printf("exiting%s\n", guarded ? "" : " (no MADV_GUARD_INSTALL here)");
}

static int g_uffd;

/* Serves every missing page of the region with zeros, until the process ends. */
static void *serve_faults(void *unused) {
  (void)unused;
  static char zeros[kPage];
  for (;;) {
    struct pollfd ready = {g_uffd, POLLIN, 0};
    if (poll(&ready, 1, -1) < 0) continue;
    struct uffd_msg message;
    if (read(g_uffd, &message, sizeof message) != (ssize_t)sizeof message) continue;
    if (message.event != UFFD_EVENT_PAGEFAULT) continue;
    struct uffdio_copy copy = {
        .dst = message.arg.pagefault.address & ~(uint64_t)(kPage - 1), .src = (uint64_t)(uintptr_t)zeros, .len = kPage};
    ioctl(g_uffd, UFFDIO_COPY, &copy);
  }
  return NULL;
}

static int userfaultfd_region(void) {
  g_uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
  if (g_uffd < 0) return 77;
  struct uffdio_api api = {.api = UFFD_API};
  if (ioctl(g_uffd, UFFDIO_API, &api) != 0) return 77;
  char *region = mmap(NULL, 16 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) exit(10);
  struct uffdio_register registration = {.range = {(uint64_t)(uintptr_t)region, 16 * kPage},
                                         .mode = UFFDIO_REGISTER_MODE_MISSING};
  if (ioctl(g_uffd, UFFDIO_REGISTER, &registration) != 0) return 77;
  pthread_t server;
  if (pthread_create(&server, NULL, serve_faults, NULL) != 0) exit(10);
  ((CUdeviceptr *)region)[0] = allocate(8001); /* the first page, served by the thread */
  g_memory = region;
  leak(8002);
  printf("exiting\n");
  return 0;
}

/* A line of /proc/self/status in KiB ("RssShmem:"), or -1. */
static long status_kib(const char *field) {
  FILE *status = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (status != NULL && fgets(line, sizeof line, status) != NULL)
    if (strncmp(line, field, strlen(field)) == 0) kib = strtol(line + strlen(field), NULL, 10);
  if (status != NULL) fclose(status);
  return kib;
}

static void lease_with_leak(size_t bytes) {
  leaseguard_lease_t lease = LEASEGUARD_LEASE_BEGIN("job", 0, 0);
  LEASEGUARD_LEASE_ENTER(lease);
  leak(bytes);
  LEASEGUARD_LEASE_LEAVE();
  LEASEGUARD_LEASE_END(lease); /* classified now: --reachability leases */
}

static void sparse_ring(void) {
  const size_t ring_bytes = (size_t)256 << 20;
  char *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ring == MAP_FAILED) exit(10);
  ((CUdeviceptr *)(ring + ring_bytes / 2))[0] = allocate(8101);
  g_memory = ring;
  lease_with_leak(8102);
  printf("RssShmem %s\n", status_kib("RssShmem:") > 16 * 1024 ? "grew past 16 MiB" : "stayed small");
}

static void fresh_device(void) {
  enum { kBuffer = 256, kSimulatorBlock = kBuffer + 255 }; /* sim_device.cpp: bytes + alignment - 1 */
  for (int i = 0; i < 200; ++i) {
    const CUdeviceptr first = allocate(kBuffer);
    CUdeviceptr *leftover = malloc(kSimulatorBlock);
    if (leftover == NULL) exit(10);
    for (size_t word = 0; word < kSimulatorBlock / sizeof *leftover; ++word) leftover[word] = first;
    free(leftover);
    allocate(kBuffer); /* most often on the block just freed */
  }
  printf("exiting\n");
}

__attribute__((used)) static void *volatile g_reserved, *volatile g_sealed, *volatile g_huge;

static void siblings(void) {
  const size_t reserved_bytes = (size_t)1 << 30, huge_bytes = (size_t)4 << 20;
  char *reserved =
      mmap(NULL, reserved_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  char *sealed = mmap(NULL, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *huge = mmap(NULL, huge_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED || sealed == MAP_FAILED || huge == MAP_FAILED) exit(10);
  reserved[reserved_bytes / 2] = 1;
  ((CUdeviceptr *)sealed)[0] = allocate(8201);
  syscall(462 /* mseal, Linux 6.10 */, sealed, kPage, 0); /* left as it is where there is none */
  madvise(huge, huge_bytes, MADV_HUGEPAGE);
  memset(huge, 0, huge_bytes);
  ((CUdeviceptr *)(huge + huge_bytes - 8))[0] = allocate(8202);
  g_reserved = reserved;
  g_sealed = sealed;
  g_huge = huge;
  lease_with_leak(8203);
  printf("RssAnon %s\n", status_kib("RssAnon:") > 64 * 1024 ? "grew past 64 MiB" : "stayed small");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  victim_primary_context();
  if (strcmp(mode, "registered_unmapped") == 0) registered_unmapped();
  else if (strcmp(mode, "guard_block") == 0) guard_block();
  else if (strcmp(mode, "guard_install") == 0) guard_install();
  else if (strcmp(mode, "userfaultfd") == 0) return userfaultfd_region();
  else if (strcmp(mode, "sparse_ring") == 0) sparse_ring();
  else if (strcmp(mode, "siblings") == 0) siblings();
  else if (strcmp(mode, "fresh_device") == 0) fresh_device();
  else return 2;
  return 0;
}
