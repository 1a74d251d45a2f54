/* Programs whose threads wait, block signals or run short of stack while leaseguard stops them
 * for a classification; each must go on exactly as without leaseguard
 * (tests/integration/quiet_stop_test.cpp; docs/reliability.md lists each):
 *   waits            a thread waits in each of epoll_wait, epoll_pwait, sigtimedwait, select,
 *                    pselect, poll, a futex with a timeout, read on a pipe, nanosleep and
 *                    clock_nanosleep while two leases end (classified: --reachability leases);
 *                    then main wakes them. Prints each call's result; exits 3 if any failed
 *   exit_wait        no signal handler; a worker waits in epoll_wait, and writes "EINTR" and
 *                    exits 3 if it ever returns it; main holds 7301 in a global, drops 7302, and
 *                    exits while the worker waits (the exit scan stops it)
 *   ttl_waits        one thread in poll(1500 ms), another in nanosleep(1.5 s), while the process
 *                    lease's TTL (run --ttl 300ms) ends and is classified; exits 3 on EINTR
 *   seccomp MODE     a seccomp filter that denies tgkill (MODE errno: EPERM; kill: the process
 *                    dies of SIGSYS); a thread waits holding 7401 on its stack only; main drops
 *                    7402 and exits
 *   connect_wait     a thread waits in connect (a UNIX socket whose listener's backlog is full,
 *                    with a send timeout) while a lease ends (classified); then main accepts,
 *                    and the thread prints what connect returned
 *   small_stack      a thread with the smallest stack glibc allows waits in read with about
 *                    3.3 KiB of it left, holding 7501 there; main drops 7502 and exits */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <leaseguard/annotate.h>

#include "victim.h"

static CUcontext g_context; /* made current in each thread that allocates */

static VICTIM_NOINLINE void leak(size_t bytes) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
}

static void lease_with_leak(size_t bytes) {
  leaseguard_lease_t lease = LEASEGUARD_LEASE_BEGIN("job", 0, 0);
  LEASEGUARD_LEASE_ENTER(lease);
  leak(bytes);
  LEASEGUARD_LEASE_LEAVE();
  LEASEGUARD_LEASE_END(lease); /* classified now: --reachability leases */
}

static pid_t current_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* Whether thread `tid` waits in a system call now, as /proc says (its first field is the call's
 * number; "running" or -1 otherwise). */
static int waits_in_system_call(pid_t tid) {
  char path[64], text[32] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *file = fopen(path, "r");
  if (file == NULL) return 0;
  const int read_ok = fscanf(file, "%31s", text) == 1;
  fclose(file);
  return read_ok && strcmp(text, "running") != 0 && strcmp(text, "-1") != 0;
}

/* ---- waits: every kind of wait, woken by main ---- */

enum {
  kEpollWait,
  kEpollPwait,
  kSigtimedwait,
  kSelect,
  kPselect,
  kPoll,
  kFutex,
  kRead,
  kNanosleep,
  kClockNanosleep,
  kWaits
};
static const char *const kWaitNames[kWaits] = {"epoll_wait", "epoll_pwait",    "sigtimedwait", "select",
                                               "pselect",    "poll",           "futex",        "read",
                                               "nanosleep",  "clock_nanosleep"};
static int g_event, g_epoll, g_pipe[2], g_read_pipe[2];
static uint32_t g_futex_word;
static pid_t g_tids[kWaits];
static int g_results[kWaits], g_errors[kWaits];

static int one_wait(int which) {
  const struct timespec long_wait = {600, 0}, short_sleep = {2, 0};
  struct epoll_event event;
  fd_set readable;
  FD_ZERO(&readable);
  FD_SET(g_pipe[0], &readable);
  sigset_t user1;
  sigemptyset(&user1);
  sigaddset(&user1, SIGUSR1);
  struct pollfd poll_pipe = {g_pipe[0], POLLIN, 0};
  switch (which) {
    case kEpollWait: return epoll_wait(g_epoll, &event, 1, -1) == 1 ? 0 : -1;
    case kEpollPwait: return epoll_pwait(g_epoll, &event, 1, -1, NULL) == 1 ? 0 : -1;
    case kSigtimedwait: return sigtimedwait(&user1, NULL, &long_wait) == SIGUSR1 ? 0 : -1;
    case kSelect: return select(g_pipe[0] + 1, &readable, NULL, NULL, NULL) == 1 ? 0 : -1;
    case kPselect: return pselect(g_pipe[0] + 1, &readable, NULL, NULL, &long_wait, NULL) == 1 ? 0 : -1;
    case kPoll: return poll(&poll_pipe, 1, -1) == 1 ? 0 : -1;
    case kFutex:
      while (__atomic_load_n(&g_futex_word, __ATOMIC_SEQ_CST) == 0)
        if (syscall(SYS_futex, &g_futex_word, FUTEX_WAIT_PRIVATE, 0, &long_wait, NULL, 0) != 0 && errno != EAGAIN)
          return -1;
      return 0;
    case kRead: {
      char byte; /* a pipe of its own: g_pipe stays readable for select, pselect and poll */
      return read(g_read_pipe[0], &byte, 1) == 1 ? 0 : -1;
    }
    case kNanosleep: return nanosleep(&short_sleep, NULL);
    case kClockNanosleep: return clock_nanosleep(CLOCK_MONOTONIC, 0, &short_sleep, NULL) == 0 ? 0 : -1;
  }
  return -1;
}

static void *waiter(void *argument) {
  const int which = (int)(intptr_t)argument;
  __atomic_store_n(&g_tids[which], current_tid(), __ATOMIC_SEQ_CST);
  errno = 0;
  g_results[which] = one_wait(which);
  g_errors[which] = errno;
  return NULL;
}

static int waits(void) {
  sigset_t user1;
  sigemptyset(&user1);
  sigaddset(&user1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &user1, NULL); /* inherited: SIGUSR1 waits for sigtimedwait */
  g_event = eventfd(0, EFD_SEMAPHORE);
  g_epoll = epoll_create1(0);
  struct epoll_event wanted = {.events = EPOLLIN};
  if (g_event < 0 || g_epoll < 0 || pipe(g_pipe) != 0 || pipe(g_read_pipe) != 0 ||
      epoll_ctl(g_epoll, EPOLL_CTL_ADD, g_event, &wanted) != 0)
    exit(10);
  pthread_t threads[kWaits];
  for (int i = 0; i < kWaits; ++i)
    if (pthread_create(&threads[i], NULL, waiter, (void *)(intptr_t)i) != 0) exit(10);
  for (int i = 0; i < kWaits; ++i)
    while (__atomic_load_n(&g_tids[i], __ATOMIC_SEQ_CST) == 0 || !waits_in_system_call(g_tids[i])) sched_yield();
  lease_with_leak(7201);
  lease_with_leak(7202);
  /* Wake each: the eventfd (both epolls), the pipes, the futex, SIGUSR1. */
  if (eventfd_write(g_event, 2) != 0 || write(g_pipe[1], "x", 1) != 1 || write(g_read_pipe[1], "x", 1) != 1) exit(11);
  __atomic_store_n(&g_futex_word, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &g_futex_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  syscall(SYS_tgkill, getpid(), g_tids[kSigtimedwait], SIGUSR1);
  int failed = 0;
  for (int i = 0; i < kWaits; ++i) {
    pthread_join(threads[i], NULL);
    printf("%s: %s\n", kWaitNames[i], g_results[i] == 0 ? "ok" : strerror(g_errors[i]));
    failed |= g_results[i] != 0;
  }
  return failed ? 3 : 0;
}

/* ---- exit_wait: the exit scan finds a worker in epoll_wait ---- */

static CUdeviceptr g_held;

static void *wait_for_events(void *unused) {
  (void)unused;
  __atomic_store_n(&g_tids[0], current_tid(), __ATOMIC_SEQ_CST);
  struct epoll_event event;
  for (;;) {
    if (epoll_wait(g_epoll, &event, 1, -1) < 0 && errno == EINTR) {
      const char message[] = "EINTR\n";
      if (write(STDOUT_FILENO, message, sizeof message - 1) < 0) _exit(4);
      _exit(3);
    }
  }
  return NULL;
}

static void exit_wait(void) {
  g_epoll = epoll_create1(0);
  pthread_t worker;
  if (g_epoll < 0 || pthread_create(&worker, NULL, wait_for_events, NULL) != 0) exit(10);
  while (__atomic_load_n(&g_tids[0], __ATOMIC_SEQ_CST) == 0 || !waits_in_system_call(g_tids[0])) sched_yield();
  CHECK(cuMemAlloc_v2(&g_held, 7301));
  leak(7302);
  printf("exiting\n");
}

/* ---- ttl_waits: a process lease's TTL ends while threads wait with timeouts ---- */

static void *poll_a_while(void *unused) {
  (void)unused;
  return (void *)(intptr_t)(poll(NULL, 0, 1500) == 0 ? 0 : errno);
}

static void *sleep_a_while(void *unused) {
  (void)unused;
  const struct timespec wait = {1, 500000000};
  return (void *)(intptr_t)(nanosleep(&wait, NULL) == 0 ? 0 : errno);
}

static int ttl_waits(void) {
  pthread_t polling, sleeping;
  if (pthread_create(&polling, NULL, poll_a_while, NULL) != 0 ||
      pthread_create(&sleeping, NULL, sleep_a_while, NULL) != 0)
    exit(10);
  leak(7601);
  void *poll_error, *sleep_error;
  pthread_join(polling, &poll_error);
  pthread_join(sleeping, &sleep_error);
  printf("poll: %s\nnanosleep: %s\n", poll_error ? strerror((int)(intptr_t)poll_error) : "ok",
         sleep_error ? strerror((int)(intptr_t)sleep_error) : "ok");
  return poll_error || sleep_error ? 3 : 0;
}

/* ---- seccomp: tgkill denied ---- */

static int g_waiter_ready;

/* Says it is ready and waits in read until the process ends. */
static void wait_forever(void) {
  __atomic_store_n(&g_waiter_ready, 1, __ATOMIC_SEQ_CST);
  char byte;
  while (read(g_pipe[0], &byte, 1) < 0) {
  }
}

static void *hold_on_stack(void *size) {
  CHECK(cuCtxSetCurrent(g_context));
  CUdeviceptr held;
  CHECK(cuMemAlloc_v2(&held, (size_t)(intptr_t)size));
  wait_forever();
  __asm__ volatile("" : : "r"(&held) : "memory"); /* held lives until the wait ends */
  return NULL;
}

static void deny_tgkill(int kill) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tkill, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_tgsigqueueinfo, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
    exit(77);
}

static void seccomp_waiter(const char *mode) {
  deny_tgkill(strcmp(mode, "kill") == 0);
  if (pipe(g_pipe) != 0) exit(10);
  pthread_t waiter_thread;
  if (pthread_create(&waiter_thread, NULL, hold_on_stack, (void *)(intptr_t)7401) != 0) exit(10);
  while (!__atomic_load_n(&g_waiter_ready, __ATOMIC_SEQ_CST)) sched_yield();
  leak(7402);
  printf("exiting\n");
}

/* ---- connect_wait: a thread in connect, which a stop cannot restart ---- */

static char g_socket_path[108];
static int g_connect_result = -2, g_connect_errno;

static void *connect_slowly(void *unused) {
  (void)unused;
  __atomic_store_n(&g_tids[0], current_tid(), __ATOMIC_SEQ_CST);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  const struct timeval timeout = {60, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  memcpy(address.sun_path, g_socket_path, sizeof address.sun_path);
  g_connect_result = connect(fd, (struct sockaddr *)&address, sizeof address);
  g_connect_errno = errno;
  return NULL;
}

static int connect_wait(void) {
  snprintf(g_socket_path, sizeof g_socket_path, "/tmp/leaseguard-quiet-stop-%d", (int)getpid());
  unlink(g_socket_path);
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  memcpy(address.sun_path, g_socket_path, sizeof address.sun_path);
  if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 0) != 0)
    exit(10);
  /* The backlog full: one connection waits unaccepted, so the next connect blocks. */
  const int first = socket(AF_UNIX, SOCK_STREAM, 0);
  if (connect(first, (struct sockaddr *)&address, sizeof address) != 0) exit(10);
  pthread_t thread;
  if (pthread_create(&thread, NULL, connect_slowly, NULL) != 0) exit(10);
  while (__atomic_load_n(&g_tids[0], __ATOMIC_SEQ_CST) == 0 || !waits_in_system_call(g_tids[0])) sched_yield();
  lease_with_leak(7701);
  accept(listener, NULL, NULL); /* room in the backlog: the waiting connect completes */
  pthread_join(thread, NULL);
  unlink(g_socket_path);
  printf("connect: %s\n", g_connect_result == 0 ? "ok" : strerror(g_connect_errno));
  return g_connect_result == 0 ? 0 : 3;
}

/* ---- small_stack: a waiting thread with 3.3 KiB of stack left ---- */

static VICTIM_NOINLINE void wait_with_little_left(size_t left) {
  pthread_attr_t attributes;
  void *low;
  size_t size;
  pthread_getattr_np(pthread_self(), &attributes);
  pthread_attr_getstack(&attributes, &low, &size);
  pthread_attr_destroy(&attributes);
  char here;
  const size_t free_bytes = (size_t)(&here - (char *)low);
  if (free_bytes < left + 512) exit(12);
  volatile char *filler = __builtin_alloca(free_bytes - left);
  filler[0] = 1;
  wait_forever();
  filler[1] = 1;
}

static void *small_stack_thread(void *unused) {
  (void)unused;
  CHECK(cuCtxSetCurrent(g_context));
  CUdeviceptr held; /* allocated before the stack is used up: the wait itself needs little */
  CHECK(cuMemAlloc_v2(&held, 7501));
  wait_with_little_left(3300);
  __asm__ volatile("" : : "r"(&held) : "memory");
  return NULL;
}

static void small_stack(void) {
  if (pipe(g_pipe) != 0) exit(10);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  const long minimum = sysconf(_SC_THREAD_STACK_MIN);
  pthread_attr_setstacksize(&attributes, (size_t)(minimum > 16384 ? minimum : 16384));
  pthread_t thread;
  if (pthread_create(&thread, &attributes, small_stack_thread, NULL) != 0) exit(10);
  while (!__atomic_load_n(&g_waiter_ready, __ATOMIC_SEQ_CST)) sched_yield();
  leak(7502);
  printf("exiting\n");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  g_context = victim_primary_context();
  if (strcmp(mode, "waits") == 0) return waits();
  if (strcmp(mode, "exit_wait") == 0) exit_wait();
  else if (strcmp(mode, "ttl_waits") == 0) return ttl_waits();
  else if (strcmp(mode, "seccomp") == 0) seccomp_waiter(argc > 2 ? argv[2] : "errno");
  else if (strcmp(mode, "small_stack") == 0) small_stack();
  else if (strcmp(mode, "connect_wait") == 0) return connect_wait();
  else return 2;
  return 0;
}
