/* Ordinary things programs do that leaseguard must survive without harm
 * (tests/integration/host_safety_test.cpp; docs/reliability.md lists each):
 *   close_fds FILE   a daemon closes every descriptor from 3 up, opens its data file FILE
 *                    (which takes the journal's old number), then allocates a lot
 *   dup2 FILE        the program dup2()s its data file FILE over the journal's descriptor
 *   fsize            RLIMIT_FSIZE (ulimit -f) of 64 KiB, then many allocations
 *   sigterm          a SIGTERM handler installed without SA_RESTART; blocks in read()
 *                    and expects EINTR when SIGTERM comes
 *   clone            children made by a raw clone() (no fork(), so no fork handlers), one
 *                    sharing the descriptor table, allocate while the parent does
 *   as_limit         RLIMIT_AS (ulimit -v) 256 MiB above what the program uses, then a
 *                    malloc of 240 MiB
 *   unshare          leaseguard's threads running, then unshare(CLONE_NEWUSER)
 *   exit_race FILE   threads allocate while main returns (up to kRaceCap each); FILE counts
 *                    the allocations each thread began and completed
 *   exit_in_handler  a SIGINT handler that calls exit(0), and a thread that sends SIGINT while
 *                    main allocates and frees: the signal mostly lands inside leaseguard
 *   jump_out [altstack]  a SIGUSR1 handler (on an alternate signal stack if asked) that
 *                    siglongjmp()s out of a context destroy the driver is still in
 *                    (LEASEGUARD_SIM_DESTROY_LINGER_MS), then allocates on
 *   main_exits       main holds an allocation in a global and calls pthread_exit; a thread
 *                    waits until main has exited, drops an allocation, and ends the process
 *   realtime_handler a lease ends (classified, with an idle thread stopped) before the
 *                    program installs a handler of its own for SIGRTMAX, and another after;
 *                    exits 20 if leaseguard's stops reached the program's handler
 *   threads_churn    leases end (each classified) while short-lived threads start and end
 *                    all the time, and an idle thread waits
 *   blocks_signals   a thread that blocks every signal waits in sigwait, the only holder of
 *                    an allocation on its stack; main drops another and exits
 *   frees_unstopped  a thread that blocks every signal allocates and frees large blocks and
 *                    maps and unmaps memory without pause while leases end (classified)
 *   many_threads [N] N threads (16,500: more than the world stop has room for) wait on a
 *                    lock while main drops an allocation and exits; 77 if they cannot be made
 *   no_fds           holds an allocation in a global, drops one, then opens /dev/null until
 *                    no descriptor is left and exits
 *   realtime_default a lease ends (classified, with an idle thread stopped), then the program
 *                    sends itself SIGRTMAX, which it left at its default action: it must die of it
 *   realtime_sigset  as realtime_handler, with the handler installed by sigset(); exits 20 if
 *                    leaseguard's stops reached the program's handler
 *   vfork_exit [clone] a vfork child (or, with `clone`, a raw clone sharing the memory)
 *                    whose exec fails calls exit(), not _exit(), running its exit handlers in
 *                    the parent's memory; the parent then holds 7101 in a global, allocates
 *                    and frees, drops 7102, and exits
 *   near_limit FILE  moves itself into a memory cgroup (FILE: its cgroup.procs), keeps 10^6
 *                    small heap blocks and an allocation in globals, drops one, and exits:
 *                    a program whose limit leaves room for itself, not for a classification
 *                    of that many blocks */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <leaseguard/annotate.h>

#include "victim.h"

static VICTIM_NOINLINE void leak(size_t bytes) {
  CUdeviceptr pointer;
  CHECK(cuMemAlloc_v2(&pointer, bytes));
}

static void churn(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    CUdeviceptr pointer;
    CHECK(cuMemAlloc_v2(&pointer, 64));
    CHECK(cuMemFree_v2(pointer));
  }
}

static int open_data_file(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  char data[100];
  memset(data, 'd', sizeof data);
  if (fd < 0 || write(fd, data, sizeof data) != (ssize_t)sizeof data) exit(5);
  return fd;
}

static long file_size(int fd) {
  struct stat status;
  return fstat(fd, &status) == 0 ? (long)status.st_size : -1;
}

/* The descriptor of leaseguard's journal, found as a program looking at /proc would. */
static int journal_descriptor(void) {
  DIR *fds = opendir("/proc/self/fd");
  struct dirent *entry;
  int found = -1;
  while (fds != NULL && (entry = readdir(fds)) != NULL) {
    char link[300], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
    ssize_t length = readlink(link, target, sizeof target - 1);
    if (length <= 8) continue;
    target[length] = '\0';
    if (strcmp(target + length - 8, ".journal") == 0) found = atoi(entry->d_name);
  }
  if (fds != NULL) closedir(fds);
  return found;
}

static void close_fds(const char *data_path) {
  leak(1001);
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  int data = open_data_file(data_path);
  churn(60000); /* several times what the journal had room for */
  leak(1002);
  printf("data file %ld bytes\n", file_size(data));
}

static void dup2_over_journal(const char *data_path) {
  leak(2001);
  int journal = journal_descriptor();
  int data = open_data_file(data_path);
  if (journal < 0 || dup2(data, journal) != journal) exit(6);
  churn(60000);
  leak(2002);
  printf("data file %ld bytes\n", file_size(data));
}

static void fsize_limit(void) {
  struct rlimit limit = {64 << 10, 64 << 10};
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) exit(7);
  leak(3001);
  churn(20000);
  leak(3002);
  printf("fsize done\n");
}

static void on_sigterm(int signal_number) { (void)signal_number; }

static void sigterm_interrupts(void) {
  leak(4001);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_sigterm; /* no SA_RESTART: the read below must fail with EINTR */
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGTERM, &action, NULL) != 0) exit(8);
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) exit(9);
  alarm(60); /* a guard against hanging forever if the read is restarted: fails the test */
  printf("ready\n");
  fflush(stdout);
  char byte;
  ssize_t got = read(pipe_ends[0], &byte, 1);
  printf("read returned %zd (%s)\n", got, got < 0 ? strerror(errno) : "data");
}

static VICTIM_NOINLINE void leak_in_clone_child(size_t bytes) { leak(bytes); }

static int clone_child(void *bytes) {
  leak_in_clone_child((size_t)(uintptr_t)bytes);
  churn(100);
  exit(0); /* as a process ends: its exit handlers, leaseguard's among them, run */
}

static void raw_clone(void) {
  leak(5001);
  const int flags[2] = {SIGCHLD, SIGCHLD | CLONE_FILES};
  for (int i = 0; i < 2; ++i) {
    char *stack = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    pid_t child = clone(clone_child, stack + (1 << 20), flags[i], (void *)(uintptr_t)(6001 + i));
    if (child < 0) exit(10);
    churn(100); /* the parent goes on writing where the child would */
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(11);
  }
  leak(5002);
  printf("clone done\n");
}

static long address_space_bytes(void) {
  FILE *status = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (status != NULL && fgets(line, sizeof line, status) != NULL)
    if (sscanf(line, "VmSize: %ld kB", &kib) == 1) break;
  if (status != NULL) fclose(status);
  return kib * 1024;
}

static void as_limit(void) {
  const long before = address_space_bytes();
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max = (rlim_t)(before + (256l << 20));
  if (setrlimit(RLIMIT_AS, &limit) != 0) exit(12);
  leak(7001); /* the journal opens here */
  churn(100);
  printf("leaseguard took %ld KiB of address space\n", (address_space_bytes() - before) / 1024);
  void *large = malloc(240l << 20);
  printf("malloc of 240 MiB %s\n", large != NULL ? "succeeded" : "failed");
}

static int thread_count(void) {
  DIR *tasks = opendir("/proc/self/task");
  struct dirent *entry;
  int count = 0;
  while (tasks != NULL && (entry = readdir(tasks)) != NULL) count += entry->d_name[0] != '.';
  if (tasks != NULL) closedir(tasks);
  return count;
}

static void unshare_user(void) {
  /* The lease watchdog (a lease with a time-to-live) and the journal's thread (a megabyte
   * of journal) are running. */
  leaseguard_lease_t long_lease = LEASEGUARD_LEASE_BEGIN("long", 3600 * 1000, LEASEGUARD_REPORT);
  leak(8001);
  churn(20000);
  printf("threads before: %s\n", thread_count() > 1 ? "several" : "one");
  int result = unshare(CLONE_NEWUSER);
  printf("unshare: %s\n", result == 0 ? "ok" : strerror(errno));
  /* The watchdog is back: a lease with a short time-to-live expires, and its leak is
   * reclaimed (the device's free memory comes back). The leak must be recorded before the
   * lease expires, or it belongs to the process lease and is never reclaimed, and on a loaded
   * machine a millisecond may pass first. A lease marks itself ended before it looks for
   * what it holds, so a lease still open after the allocation holds it; one that ended
   * first may not, and the next try gives ten times the time. Never a wait on a clock; the
   * tries end at 100 s of time to live, and then the output says no lease held the leak. */
  int held = 0;
  for (unsigned long ttl_ms = 1; ttl_ms <= 100000 && !held; ttl_ms *= 10) {
    size_t free_before = 0, free_now = 0, total = 0;
    CHECK(cuMemGetInfo_v2(&free_before, &total));
    leaseguard_lease_t short_lease = LEASEGUARD_LEASE_BEGIN("short", ttl_ms, LEASEGUARD_RECLAIM);
    if (short_lease == 0) {
      held = 1; /* not recording: nothing to wait for */
      break;
    }
    if (LEASEGUARD_LEASE_ENTER(short_lease) != 0) continue;
    leak(1 << 20);
    LEASEGUARD_LEASE_LEAVE();
    if (LEASEGUARD_LEASE_ENTER(short_lease) != 0) continue;
    LEASEGUARD_LEASE_LEAVE();
    do {
      sched_yield();
      CHECK(cuMemGetInfo_v2(&free_now, &total));
    } while (free_now < free_before);
    held = 1;
  }
  if (!held) printf("unshare: no short lease held its allocation\n");
  leak(8002);
  LEASEGUARD_LEASE_END(long_lease);
  printf("unshare done\n");
}

/* Each thread's count of allocations begun and completed, in a file that outlives the
 * process: the report must list at least every completed one and no more than were begun. */
struct Counts {
  uint64_t begun;
  uint64_t completed;
};
enum { kRaceThreads = 4 };
/* Each thread stops at this many allocations and waits for the end: the race is the exit
 * beginning while every thread is inside the allocation path, which it is (main returns
 * after each thread's first 100). Unbounded, a slow exit (ThreadSanitizer on a loaded
 * machine: 10 to 30 s a round, measured) let the threads pile up tens of thousands more
 * allocations for the report to classify, and five rounds outran the test's timeout. */
enum { kRaceCap = 4000 };
static struct Counts *g_counts;
static CUcontext g_context;

static void *allocate_until_exit(void *index) {
  struct Counts *mine = &g_counts[(uintptr_t)index];
  CHECK(cuCtxSetCurrent(g_context));
  for (int i = 0; i < kRaceCap; ++i) {
    CUdeviceptr pointer;
    __atomic_add_fetch(&mine->begun, 1, __ATOMIC_SEQ_CST);
    if (cuMemAlloc_v2(&pointer, 256) != CUDA_SUCCESS) _exit(13);
    __atomic_add_fetch(&mine->completed, 1, __ATOMIC_SEQ_CST);
  }
  for (;;) pause();
  return NULL;
}

static int exit_race(const char *counts_path) {
  int fd = open(counts_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, sizeof(struct Counts) * kRaceThreads) != 0) exit(14);
  g_counts = mmap(NULL, sizeof(struct Counts) * kRaceThreads, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (g_counts == MAP_FAILED) exit(15);
  pthread_t threads[kRaceThreads];
  for (uintptr_t i = 0; i < kRaceThreads; ++i) pthread_create(&threads[i], NULL, allocate_until_exit, (void *)i);
  /* Every thread is allocating. */
  for (int i = 0; i < kRaceThreads; ++i)
    while (__atomic_load_n(&g_counts[i].completed, __ATOMIC_SEQ_CST) < 100) sched_yield();
  return 0; /* main returns while they go on */
}

/* exit() from a signal handler is not async-signal-safe, and common all the same. Here the
 * signal lands while main is inside leaseguard's hooks or heap table most of the time, with
 * their locks held below the handler: leaseguard's exit work must not wait for them (a minute's
 * alarm turns such a wait into a failure). */
static void exit_on_signal(int signal_number) {
  (void)signal_number;
  exit(0);
}

static long g_pairs;

static void *interrupt_main(void *main_thread) {
  while (__atomic_load_n(&g_pairs, __ATOMIC_SEQ_CST) < 1000) sched_yield();
  pthread_kill(*(pthread_t *)main_thread, SIGINT);
  return NULL;
}

static void exit_in_handler(void) {
  signal(SIGINT, exit_on_signal);
  leak(5001);
  alarm(60);
  static pthread_t main_thread;
  main_thread = pthread_self();
  pthread_t helper;
  if (pthread_create(&helper, NULL, interrupt_main, &main_thread) != 0) exit(10);
  for (;;) {
    CUdeviceptr pointer;
    CHECK(cuMemAlloc_v2(&pointer, 4096));
    free(malloc(100));
    CHECK(cuMemFree_v2(pointer));
    __atomic_add_fetch(&g_pairs, 1, __ATOMIC_SEQ_CST);
  }
}

/* A timeout that jumps out of a driver call is how some programs give up on a stuck GPU:
 * siglongjmp() from a signal handler, back past the hook the call went through. leaseguard
 * must record what the thread allocates afterwards, and classify at exit as usual. */
static sigjmp_buf g_jump;
static pid_t g_main_tid;

static void jump_out_of_the_call(int signal_number) {
  (void)signal_number;
  siglongjmp(g_jump, 1);
}

/* Whether the thread is in a sleep system call: the driver's linger after a destroy. */
static int sleeping_in_the_driver(pid_t tid) {
  char path[64], line[64] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *file = fopen(path, "r");
  if (file == NULL) return 0;
  if (fgets(line, sizeof line, file) == NULL) line[0] = '\0';
  fclose(file);
  const long number = strtol(line, NULL, 10);
  return number == 35 || number == 230; /* nanosleep, clock_nanosleep */
}

static void *interrupt_the_destroy(void *main_thread) {
  while (!sleeping_in_the_driver(g_main_tid)) sched_yield();
  pthread_kill(*(pthread_t *)main_thread, SIGUSR1);
  return NULL;
}

static void jump_out(const char *where) {
  leak(5001);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = jump_out_of_the_call;
  if (strcmp(where, "altstack") == 0) {
    static char alternate[64 * 1024];
    stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) exit(12);
    action.sa_flags = SA_ONSTACK;
  }
  sigaction(SIGUSR1, &action, NULL);
  CUcontext own;
  CHECK(cuCtxCreate(&own, 0, 0));
  static pthread_t main_thread;
  main_thread = pthread_self();
  g_main_tid = (pid_t)syscall(SYS_gettid);
  if (sigsetjmp(g_jump, 1) == 0) {
    pthread_t helper;
    if (pthread_create(&helper, NULL, interrupt_the_destroy, &main_thread) != 0) exit(10);
    pthread_detach(helper);
    cuCtxDestroy(own); /* lingers until the signal jumps back to sigsetjmp */
    exit(11);
  }
  CHECK(cuCtxSetCurrent(g_context));
  churn(100);
  leak(6001);
  free(malloc(100));
}

/* main's pthread_exit leaves the process running on its other threads; the last one to end
 * runs the exit handlers. /proc/self then names an exited (zombie) thread: its maps read empty
 * and it takes no signal. */
static CUdeviceptr g_held_by_main;

static int main_thread_exited(void) {
  char path[64], stat[512] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
  FILE *file = fopen(path, "r");
  if (file == NULL) return 1;
  if (fgets(stat, sizeof stat, file) == NULL) stat[0] = '\0';
  fclose(file);
  const char *name_end = strrchr(stat, ')');
  return name_end != NULL && name_end[1] == ' ' && name_end[2] == 'Z';
}

static void *outlive_main(void *unused) {
  (void)unused;
  while (!main_thread_exited()) sched_yield();
  CHECK(cuCtxSetCurrent(g_context));
  leak(5102);
  return NULL;
}

static void main_exits(void) {
  CHECK(cuMemAlloc_v2(&g_held_by_main, 5101));
  pthread_t last;
  if (pthread_create(&last, NULL, outlive_main, NULL) != 0) exit(10);
  pthread_exit(NULL);
}

/* A program may take a real-time signal for itself at any time; leaseguard's world stop took
 * one nothing handled when it first needed one (SIGRTMAX, the first it tries). */
static volatile sig_atomic_t g_realtime_hits;

static void count_realtime(int signal_number) {
  (void)signal_number;
  g_realtime_hits++;
}

static void *idle_thread(void *unused) {
  (void)unused;
  for (;;) pause();
  return NULL;
}

static void lease_with_leak(size_t bytes) {
  leaseguard_lease_t lease = LEASEGUARD_LEASE_BEGIN("job", 0, 0);
  LEASEGUARD_LEASE_ENTER(lease);
  leak(bytes);
  LEASEGUARD_LEASE_LEAVE();
  LEASEGUARD_LEASE_END(lease); /* classified now: --reachability leases */
}

static int realtime_handler(void) {
  pthread_t idle;
  if (pthread_create(&idle, NULL, idle_thread, NULL) != 0) exit(10);
  lease_with_leak(5201);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = count_realtime;
  sigaction(SIGRTMAX, &action, NULL);
  lease_with_leak(5202);
  return g_realtime_hits == 0 ? 0 : 20;
}

static void realtime_default(void) {
  pthread_t idle;
  if (pthread_create(&idle, NULL, idle_thread, NULL) != 0) exit(10);
  lease_with_leak(5211);
  raise(SIGRTMAX);
  printf("survived SIGRTMAX\n");
}

static int realtime_sigset(void) {
  pthread_t idle;
  if (pthread_create(&idle, NULL, idle_thread, NULL) != 0) exit(10);
  lease_with_leak(5221);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // as old programs still call it
  sigset(SIGRTMAX, count_realtime);
#pragma GCC diagnostic pop
  lease_with_leak(5222);
  return g_realtime_hits == 0 ? 0 : 20;
}

/* Threads that start and end while leases are classified: each stop finds some of them inside
 * glibc's moments with every signal blocked (creation, exit), and the idle thread may still be
 * leaving the previous stop's handler. */
static int g_churning = 1;

static void *return_at_once(void *unused) { return unused; }

static void *start_threads(void *unused) {
  (void)unused;
  while (__atomic_load_n(&g_churning, __ATOMIC_SEQ_CST)) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, return_at_once, NULL) == 0) pthread_detach(thread);
  }
  return NULL;
}

static void threads_churn(void) {
  pthread_t idle, starter;
  if (pthread_create(&idle, NULL, idle_thread, NULL) != 0 || pthread_create(&starter, NULL, start_threads, NULL) != 0)
    exit(10);
  for (int i = 0; i < 40; ++i) lease_with_leak(5301 + (size_t)i);
  __atomic_store_n(&g_churning, 0, __ATOMIC_SEQ_CST);
  pthread_join(starter, NULL);
}

/* A thread that blocks every signal (a server's signal thread) is never sent the stop: it
 * runs on while the scan reads, and its stack is read from a copy. */
static int g_waiter_ready;

static void *hold_while_waiting(void *unused) {
  (void)unused;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  CUdeviceptr held; /* only here, on this thread's stack */
  CHECK(cuCtxSetCurrent(g_context));
  CHECK(cuMemAlloc_v2(&held, 5401));
  __atomic_store_n(&g_waiter_ready, 1, __ATOMIC_SEQ_CST);
  int signal_number;
  sigset_t none;
  sigemptyset(&none);
  sigaddset(&none, SIGUSR2); /* never sent */
  sigwait(&none, &signal_number);
  __asm__ volatile("" : : "r"(&held) : "memory");
  return NULL;
}

static void blocks_signals(void) {
  pthread_t waiter;
  if (pthread_create(&waiter, NULL, hold_while_waiting, NULL) != 0) exit(10);
  while (!__atomic_load_n(&g_waiter_ready, __ATOMIC_SEQ_CST)) sched_yield();
  leak(5402);
}

/* That thread runs on while each scan reads memory it frees and unmaps under it. */
static int g_unstopped_running = 1;
static void *volatile g_big_block;

static void *free_and_unmap(void *unused) {
  (void)unused;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  while (__atomic_load_n(&g_unstopped_running, __ATOMIC_SEQ_CST)) {
    g_big_block = malloc(4 << 20); /* mapped by malloc, unmapped by free */
    memset(g_big_block, 1, 1 << 20);
    free(g_big_block);
    void *mapping = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_big_block = mapping;
    if (mapping != MAP_FAILED) munmap(mapping, 4 << 20);
  }
  return NULL;
}

static void frees_unstopped(void) {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024); /* fixed: every large block is mapped and unmapped */
  pthread_t thread;
  if (pthread_create(&thread, NULL, free_and_unmap, NULL) != 0) exit(10);
  for (int i = 0; i < 40; ++i) lease_with_leak(5501 + (size_t)i);
  __atomic_store_n(&g_unstopped_running, 0, __ATOMIC_SEQ_CST);
  pthread_join(thread, NULL);
}

static pthread_mutex_t g_many_threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_thread_count = 16500;

static void *wait_for_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&g_many_threads_lock);
  pthread_mutex_unlock(&g_many_threads_lock);
  return NULL;
}

static void many_threads(void) {
  pthread_mutex_lock(&g_many_threads_lock);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, PTHREAD_STACK_MIN);
  for (int i = 0; i < g_thread_count; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, &attributes, wait_for_main, NULL) != 0) {
      printf("could not make %d threads\n", g_thread_count);
      exit(77); /* a machine with a lower limit: nothing to check */
    }
    pthread_detach(thread);
  }
  leak(6801);
}

__attribute__((used)) CUdeviceptr g_held_without_fds;

static void no_fds(void) {
  CHECK(cuMemAlloc_v2(&g_held_without_fds, 6901));
  leak(6902);
  struct rlimit limit = {256, 256};
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) exit(14);
  while (open("/dev/null", O_RDONLY) >= 0) {
  }
}

__attribute__((used)) void **g_small_blocks;
__attribute__((used)) CUdeviceptr g_held_near_limit;

static void near_limit(const char *cgroup_procs) {
  FILE *procs = fopen(cgroup_procs, "w");
  if (procs == NULL || fprintf(procs, "%d\n", (int)getpid()) < 0 || fclose(procs) != 0) exit(11);
  enum { kBlocks = 1000000 };
  g_small_blocks = malloc(sizeof(void *) * kBlocks);
  if (g_small_blocks == NULL) exit(12);
  for (int i = 0; i < kBlocks; ++i) g_small_blocks[i] = malloc(32);
  CHECK(cuMemAlloc_v2(&g_held_near_limit, 6701));
  leak(6702);
}

/* A vfork child that calls exit() (the common bug: _exit() is what it may call) runs the
 * exit handlers and destructors of the parent's program, in the parent's memory. */
static CUdeviceptr g_held_after_child;

static int exec_fails_then_exits(void *unused) {
  (void)unused;
  execl("/nonexistent/leaseguard-victim", "victim", (char *)NULL);
  exit(3);
}

static void vfork_exit(const char *how) {
  pid_t child;
  if (strcmp(how, "clone") == 0) {
    static char stack[256 << 10];
    child = clone(exec_fails_then_exits, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
  } else {
    child = vfork();
    if (child == 0) exec_fails_then_exits(NULL);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) exit(10);
  CHECK(cuMemAlloc_v2(&g_held_after_child, 7101));
  CUdeviceptr passing;
  CHECK(cuMemAlloc_v2(&passing, 4096));
  CHECK(cuMemFree_v2(passing));
  leak(7102);
  printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const char *path = argc > 2 ? argv[2] : "";
  g_context = victim_primary_context();
  if (strcmp(mode, "close_fds") == 0) close_fds(path);
  else if (strcmp(mode, "dup2") == 0) dup2_over_journal(path);
  else if (strcmp(mode, "fsize") == 0) fsize_limit();
  else if (strcmp(mode, "sigterm") == 0) sigterm_interrupts();
  else if (strcmp(mode, "clone") == 0) raw_clone();
  else if (strcmp(mode, "as_limit") == 0) as_limit();
  else if (strcmp(mode, "unshare") == 0) unshare_user();
  else if (strcmp(mode, "exit_race") == 0) return exit_race(path);
  else if (strcmp(mode, "exit_in_handler") == 0) exit_in_handler();
  else if (strcmp(mode, "jump_out") == 0) jump_out(path);
  else if (strcmp(mode, "main_exits") == 0) main_exits();
  else if (strcmp(mode, "realtime_handler") == 0) return realtime_handler();
  else if (strcmp(mode, "realtime_default") == 0) realtime_default();
  else if (strcmp(mode, "realtime_sigset") == 0) return realtime_sigset();
  else if (strcmp(mode, "threads_churn") == 0) threads_churn();
  else if (strcmp(mode, "blocks_signals") == 0) blocks_signals();
  else if (strcmp(mode, "frees_unstopped") == 0) frees_unstopped();
  else if (strcmp(mode, "near_limit") == 0) near_limit(path);
  else if (strcmp(mode, "no_fds") == 0) no_fds();
  else if (strcmp(mode, "vfork_exit") == 0) vfork_exit(path);
  else if (strcmp(mode, "many_threads") == 0) {
    if (*path != '\0') g_thread_count = atoi(path);
    many_threads();
  } else return 2;
  return 0;
}
