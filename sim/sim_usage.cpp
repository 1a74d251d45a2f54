#include "sim_usage.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace leaseguard::sim {
namespace {

// This process's page, once it allocated. Threads holding different driver shards publish
// at once, so the first of them makes it under g_making; a fork waits for every shard
// first (the driver's fork handler), so no thread holds g_making when one happens.
std::atomic<UsagePage *> g_page{nullptr};
std::mutex g_making;
bool g_unavailable = false;  // the directory or file could not be made: not published (under g_making)

// This process as NVML names it: by its pid where /proc is mounted (the node's, for a process
// put in a PID namespace of its own without a /proc of its own), the first of /proc/self/
// status's NSpid. Two processes that are each pid 1 in their namespaces are two files, not
// one file each truncates under the other's mapping (a SIGBUS).
pid_t node_pid() {
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  char text[4096];
  const ssize_t got = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  if (got <= 0) return getpid();
  text[got] = '\0';
  const char *line = std::strstr(text, "\nNSpid:");
  const long pid = line != nullptr ? std::strtol(line + 7, nullptr, 10) : 0;
  return pid > 0 ? static_cast<pid_t>(pid) : getpid();
}

// After fork the child is another process: it publishes in a file of its own.
void forget_parents_page() {
  g_page.store(nullptr, std::memory_order_relaxed);
  g_unavailable = false;
}

// At exit: this process's file, if this process made it (not a parent's, after a fork).
void remove_own_page() {
  const UsagePage *page = g_page.load(std::memory_order_acquire);
  if (page == nullptr || page->pid != node_pid()) return;
  const std::string path = usage_directory() + "/" + std::to_string(page->pid) + ".usage";
  unlink(path.c_str());
}

// With g_making held.
UsagePage *make_own_page() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] { pthread_atfork(nullptr, nullptr, forget_parents_page); });
  g_unavailable = true;
  const std::string directory = usage_directory();
  mkdir(directory.c_str(), 0755);
  struct stat status {};
  if (lstat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != geteuid()) return nullptr;
  const pid_t pid = node_pid();
  const std::string path = directory + "/" + std::to_string(pid) + ".usage";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  void *mapped = ftruncate(fd, sizeof(UsagePage)) == 0
                     ? mmap(nullptr, sizeof(UsagePage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                     : MAP_FAILED;
  close(fd);
  if (mapped == MAP_FAILED) return nullptr;
  auto *page = static_cast<UsagePage *>(mapped);
  page->pid = pid;
  page->start_time = running_start_time(pid);
  std::memcpy(page->magic, kUsageMagic, sizeof page->magic);
  g_page.store(page, std::memory_order_release);
  g_unavailable = false;
  // A process that ends normally takes its file with it (one that is killed leaves it: the
  // NVML stand-in passes over the files of processes that no longer run).
  static pthread_once_t remove_at_exit = PTHREAD_ONCE_INIT;
  pthread_once(&remove_at_exit, [] { std::atexit(remove_own_page); });
  return page;
}

UsagePage *own_page() {
  if (UsagePage *page = g_page.load(std::memory_order_acquire); page != nullptr) return page;
  std::lock_guard lock(g_making);
  if (UsagePage *page = g_page.load(std::memory_order_relaxed); page != nullptr || g_unavailable) return page;
  return make_own_page();
}

}  // namespace

std::string usage_directory() {
  if (const char *directory = std::getenv("LEASEGUARD_SIM_USAGE_DIR"); directory != nullptr && *directory == '/')
    return directory;
  return "/tmp/leaseguard-sim-usage-" + std::to_string(geteuid());
}

void publish_usage(size_t row, int device, int64_t delta) noexcept {
  if (device < 0 || device >= kUsageDevices || delta == 0) return;
  if (UsagePage *page = own_page()) __atomic_add_fetch(&page->bytes[row % kUsageRows][device], delta, __ATOMIC_RELAXED);
}

int64_t held_on(const UsagePage &page, int device) {
  int64_t held = 0;
  for (const auto &row : page.bytes) held += row[device];
  return held;
}

uint64_t running_start_time(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buffer[1024];
  const ssize_t got = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (got <= 0) return 0;
  buffer[got] = '\0';
  const char *field = std::strrchr(buffer, ')');
  if (field == nullptr || field[1] != ' ' || field[2] == 'Z' || field[2] == 'X') return 0;
  // From the state (field 3) to the start time (field 22).
  for (int index = 2; field != nullptr && index < 22; ++index) field = std::strchr(field + 1, ' ');
  return field != nullptr ? std::strtoull(field + 1, nullptr, 10) : 0;
}

}  // namespace leaseguard::sim
