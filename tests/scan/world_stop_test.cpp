// Stopping the program's threads (interpose/scan/world_stop.h): each other thread is parked
// with its registers and stack pointer read, stays parked until resume, and then goes on.
// Every wait is on an event the threads publish, never on time.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

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

TEST(WorldStop, AThreadThatBlocksTheSignalIsNotStoppedAndSaysSo) {
  Worker blocking;
  std::atomic<bool> done{false};
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  std::thread thread([&] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    note_stack(blocking);
    char byte;
    while (read(pipe_ends[0], &byte, 1) < 0) {
    }
    done = true;
  });
  while (blocking.tid.load() == 0) std::this_thread::yield();
  WorldStop world;
  ASSERT_TRUE(world.stop(nullptr, 0));
  size_t index = 0;
  const StoppedThread *thread_seen = stopped(world, blocking.tid.load(), index);
  ASSERT_NE(thread_seen, nullptr);
  EXPECT_FALSE(world.parked(index));
  EXPECT_FALSE(thread_seen->registers_read);
  EXPECT_FALSE(world.stopped_all());
  world.resume();
  ASSERT_EQ(write(pipe_ends[1], "x", 1), 1);
  thread.join();
  EXPECT_TRUE(done.load());
  close(pipe_ends[0]);
  close(pipe_ends[1]);
}

}  // namespace
}  // namespace leaseguard::interpose
