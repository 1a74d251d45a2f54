// Stopping the program's threads (interpose/scan/world_stop.h): each other thread is held
// with its registers and stack pointer read, stays held until resume, and then goes on as if
// nothing had happened: no EINTR, no signal.
// Every wait is on an event the threads publish, never on time.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "heap_tracker.h"
#include "world_stop.h"

namespace leaseguard::interpose {
namespace {

struct Worker {
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> progress{0};
  uintptr_t stack_low = 0, stack_high = 0;
};

void note_stack(Worker &worker) {
  pthread_attr_t attributes;
  pthread_getattr_np(pthread_self(), &attributes);
  void *low = nullptr;
  size_t bytes = 0;
  pthread_attr_getstack(&attributes, &low, &bytes);
  pthread_attr_destroy(&attributes);
  worker.stack_low = reinterpret_cast<uintptr_t>(low);
  worker.stack_high = worker.stack_low + bytes;
  worker.tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
}

const StoppedThread *stopped(const WorldStop &world, pid_t tid, size_t &index) {
  for (size_t i = 0; i < world.count(); ++i)
    if (world.thread(i).tid == tid) {
      index = i;
      return &world.thread(i);
    }
  return nullptr;
}

TEST(WorldStop, ParksEveryOtherThreadWithItsRegistersUntilResumed) {
  constexpr int kWorkers = 4;
  std::vector<Worker> workers(kWorkers);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (Worker &worker : workers)
    threads.emplace_back([&worker, &done] {
      note_stack(worker);
      while (!done.load(std::memory_order_relaxed)) worker.progress.fetch_add(1, std::memory_order_relaxed);
    });
  for (Worker &worker : workers)
    while (worker.progress.load() == 0) std::this_thread::yield();

  WorldStop world;
  ASSERT_TRUE(world.stop(nullptr, 0));
  EXPECT_TRUE(world.stopped_all());
  std::vector<uint64_t> progress_when_stopped;
  for (Worker &worker : workers) {
    size_t index = 0;
    const StoppedThread *thread = stopped(world, worker.tid.load(), index);
    ASSERT_NE(thread, nullptr) << "thread " << worker.tid.load() << " was not stopped";
    EXPECT_TRUE(world.parked(index));
    EXPECT_TRUE(thread->registers_read);
    EXPECT_GE(thread->stack_pointer, worker.stack_low);
    EXPECT_LT(thread->stack_pointer, worker.stack_high);
    EXPECT_NE(thread->thread_pointer, 0u);
    progress_when_stopped.push_back(worker.progress.load());
  }
  // Parked: however long this thread runs now, theirs cannot.
  for (int i = 0; i < 1000; ++i) sched_yield();
  for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(workers[i].progress.load(), progress_when_stopped[i]);
  world.resume();
  for (int i = 0; i < kWorkers; ++i)
    while (workers[i].progress.load() == progress_when_stopped[i]) std::this_thread::yield();
  done = true;
  for (std::thread &thread : threads) thread.join();
}

TEST(WorldStop, TheThreadsItIsToldToSkipRunOn) {
  Worker skipped;
  std::atomic<bool> done{false};
  std::thread thread([&] {
    note_stack(skipped);
    while (!done.load(std::memory_order_relaxed)) skipped.progress.fetch_add(1, std::memory_order_relaxed);
  });
  while (skipped.progress.load() == 0) std::this_thread::yield();
  const pid_t skip[] = {skipped.tid.load()};
  WorldStop world;
  ASSERT_TRUE(world.stop(skip, 1));
  size_t index = 0;
  EXPECT_EQ(stopped(world, skip[0], index), nullptr);
  const uint64_t seen = skipped.progress.load();
  while (skipped.progress.load() == seen) std::this_thread::yield();  // it runs while the world is stopped
  world.resume();
  done = true;
  thread.join();
}

// A thread that blocks every signal is held as any other: the stop sends no signal.
TEST(WorldStop, AThreadThatBlocksEverySignalIsHeldToo) {
  Worker blocking;
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  std::thread thread([&] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    note_stack(blocking);
    char byte;
    EXPECT_EQ(read(pipe_ends[0], &byte, 1), 1) << "errno " << errno;
  });
  while (blocking.tid.load() == 0) std::this_thread::yield();
  WorldStop world;
  ASSERT_TRUE(world.stop(nullptr, 0));
  size_t index = 0;
  const StoppedThread *thread_seen = stopped(world, blocking.tid.load(), index);
  ASSERT_NE(thread_seen, nullptr);
  EXPECT_TRUE(world.parked(index));
  EXPECT_TRUE(thread_seen->registers_read);
  EXPECT_TRUE(world.stopped_all());
  world.resume();
  ASSERT_EQ(write(pipe_ends[1], "x", 1), 1);
  thread.join();
  close(pipe_ends[0]);
  close(pipe_ends[1]);
}

// Whether /proc says `tid` waits in a system call now (its first field is the call's number).
bool waits_in_system_call(pid_t tid) {
  std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string first;
  file >> first;
  return !first.empty() && first != "running" && first != "-1";
}

// The calls a stop by ptrace would end with EINTR (the kernel restarts the others itself):
// each returns what it would have without the stop, once what it waits for comes.
TEST(WorldStop, CallsTheStopInterruptsGoOnWithoutEintr) {
  const int event = eventfd(0, 0);
  ASSERT_GE(event, 0);
  const int epoll = epoll_create1(0);
  epoll_event wanted{};
  wanted.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(epoll, EPOLL_CTL_ADD, event, &wanted), 0);
  sigset_t user1;
  sigemptyset(&user1);
  sigaddset(&user1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &user1, nullptr);  // inherited: SIGUSR1 waits for sigtimedwait
  std::atomic<pid_t> epoll_tid{0}, signal_tid{0};
  std::atomic<int> epoll_result{-2}, epoll_errno{0}, signal_result{-2}, signal_errno{0};
  std::thread epoll_waiter([&] {
    epoll_tid = static_cast<pid_t>(syscall(SYS_gettid));
    epoll_event got{};
    epoll_result = epoll_wait(epoll, &got, 1, -1);
    epoll_errno = errno;
  });
  std::thread signal_waiter([&] {
    signal_tid = static_cast<pid_t>(syscall(SYS_gettid));
    const timespec long_wait{600, 0};
    signal_result = sigtimedwait(&user1, nullptr, &long_wait);
    signal_errno = errno;
  });
  while (epoll_tid.load() == 0 || signal_tid.load() == 0 || !waits_in_system_call(epoll_tid) ||
         !waits_in_system_call(signal_tid))
    std::this_thread::yield();
  for (int round = 0; round < 3; ++round) {
    WorldStop world;
    ASSERT_TRUE(world.stop(nullptr, 0));
    EXPECT_TRUE(world.stopped_all());
    world.resume();
  }
  const uint64_t one = 1;
  ASSERT_EQ(write(event, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  ASSERT_EQ(syscall(SYS_tgkill, getpid(), signal_tid.load(), SIGUSR1), 0);
  epoll_waiter.join();
  signal_waiter.join();
  pthread_sigmask(SIG_UNBLOCK, &user1, nullptr);
  EXPECT_EQ(epoll_result.load(), 1) << "errno " << epoll_errno.load();
  EXPECT_EQ(signal_result.load(), SIGUSR1) << "errno " << signal_errno.load();
  close(epoll);
  close(event);
}

// A thread inside a tracked heap call is not held there: it goes on to the call's end and is
// held as it leaves it, so the heap table is never read half changed.
TEST(WorldStop, AThreadInsideATrackedCallIsHeldAtTheCallsEnd) {
  std::atomic<bool> in_call{false}, left_call{false}, done{false};
  std::atomic<pid_t> tid{0};
  std::thread thread([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    heap::begin_tracked_call();
    const heap::CallWords words = heap::call_words();
    uintptr_t thread_pointer;
    asm volatile("mov %%fs:0, %0" : "=r"(thread_pointer));
    auto *stop_waiting = reinterpret_cast<volatile int *>(thread_pointer + words.stop_waiting_offset);
    in_call = true;
    while (*stop_waiting == 0) {  // until the stop asks this call's end to wait
    }
    heap::end_tracked_call();
    left_call = true;
    while (!done.load()) std::this_thread::yield();
  });
  while (!in_call.load()) std::this_thread::yield();
  WorldStop world;
  ASSERT_TRUE(world.stop(nullptr, 0));
  EXPECT_TRUE(world.stopped_all());
  size_t index = 0;
  const StoppedThread *seen = stopped(world, tid.load(), index);
  ASSERT_NE(seen, nullptr);
  EXPECT_TRUE(world.parked(index));
  EXPECT_TRUE(seen->registers_read);
  EXPECT_FALSE(left_call.load()) << "held at the call's end, not past it";
  world.resume();
  while (!left_call.load()) std::this_thread::yield();
  done = true;
  thread.join();
}

// The tracer whose pid /proc gives as `tid`'s TracerPid, or 0 while none holds it.
pid_t tracer_of(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("TracerPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(10)));
  return 0;
}

// A process killed while a stop holds its threads takes the tracer with it: nothing of the
// stop's outlives the process (a tracer left waiting for the resume would keep `leaseguard
// run`, which waits for every process of the tree, waiting forever). This test process adopts
// the orphans and waits for both to end.
TEST(WorldStop, TheTracerEndsWithAProcessKilledWhileItsThreadsAreHeld) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<pid_t> worker_tid{0};
    std::thread worker([&] {
      worker_tid = static_cast<pid_t>(syscall(SYS_gettid));
      for (;;) pause();
    });
    while (worker_tid.load() == 0) std::this_thread::yield();
    std::atomic<pid_t> killer_tid{0};
    std::thread killer([&] {
      killer_tid = static_cast<pid_t>(syscall(SYS_gettid));
      while (tracer_of(worker_tid) == 0) std::this_thread::yield();  // held now
      kill(getpid(), SIGKILL);
    });
    while (killer_tid.load() == 0) std::this_thread::yield();
    const pid_t skip[] = {killer_tid.load()};
    WorldStop world;
    if (world.stop(skip, 1))
      for (;;) pause();  // held until the process is killed
    _exit(3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  // The tracer, reparented here, ends too: the wait returns once it has (ECHILD after).
  int reaped = 0;
  while (waitpid(-1, &status, __WALL) > 0) ++reaped;
  EXPECT_EQ(reaped, 1);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace leaseguard::interpose
