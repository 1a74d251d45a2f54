// Implementation of the per-process core.
#include "tracker.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "files.h"
#include "log.h"

namespace leaseguard {

std::atomic<Tracker *> Tracker::g_instance{nullptr};

namespace {

constexpr int kMaxEnteredLeases = 32;

// Per-thread attribution: the leases this thread entered, innermost last.
thread_local Lease *t_entered[kMaxEnteredLeases];
thread_local int t_entered_depth = 0;
thread_local uint32_t t_thread_id = 0;

uint32_t thread_id() noexcept {
  if (t_thread_id == 0) t_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_thread_id;
}

uint64_t realtime_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

std::vector<unsigned char> process_payload() {
  std::string command;
  char exe[4096];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  command.append(exe, length > 0 ? static_cast<size_t>(length) : 0);
  command.push_back('\0');
  uint32_t argc = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[8192];
    ssize_t got = read(fd, buffer, sizeof buffer);
    close(fd);
    if (got > 0) {
      command.append(buffer, static_cast<size_t>(got));
      if (command.back() != '\0') command.push_back('\0');
      for (ssize_t i = 0; i < got; ++i) argc += buffer[i] == '\0';
    }
  }
  journal::ProcessPayload header{};
  header.pid = getpid();
  header.ppid = getppid();
  header.argc = argc;
  header.command_bytes = static_cast<uint32_t>(command.size());
  std::vector<unsigned char> payload(sizeof header + command.size());
  std::memcpy(payload.data(), &header, sizeof header);
  std::memcpy(payload.data() + sizeof header, command.data(), command.size());
  return payload;
}

}  // namespace

uint64_t monotonic_ns() noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

Tracker::Tracker(Options options)
    : options_(std::move(options)),
      start_monotonic_ns_(monotonic_ns()),
      start_realtime_ns_(realtime_ns()),
      leases_(start_monotonic_ns_, options_.ttl_ms, options_.on_expiry,
              [this](Lease &lease) { on_expired(lease); }) {}

Tracker::~Tracker() {
  if (g_instance.load() == this) g_instance.store(nullptr);
}

Tracker *Tracker::install(const Options &options) {
  static std::mutex install_mutex;
  std::lock_guard lock(install_mutex);
  if (Tracker *existing = g_instance.load()) return existing;
  auto *tracker = new Tracker(options);  // lives until the process ends
  g_instance.store(tracker, std::memory_order_release);
  return tracker;
}

void Tracker::reinstall_after_fork() noexcept {
  Tracker *parent = g_instance.load();
  t_entered_depth = 0;
  t_thread_id = 0;
  if (parent == nullptr) return;
  // The parent's instance is abandoned, not destroyed: its locks may be held by threads that
  // do not exist in this process. Its journal mapping is the parent's file; drop it.
  parent->journal_.abandon();
  Options options = parent->options_;
  auto *child = new Tracker(options);
  child->excluded_ = parent->excluded_;
  g_instance.store(child, std::memory_order_release);
}

bool Tracker::open_journal(std::string &error) {
  if (!make_output_directory(options_.out_dir, error)) return false;
  journal::HeaderPayload header{};
  std::memcpy(header.magic, journal::kFileMagic, sizeof header.magic);
  header.version = journal::kVersion;
  header.slot_bytes = journal::kSlotBytes;
  header.pid = getpid();
  header.ppid = getppid();
  header.start_realtime_ns = start_realtime_ns_;
  header.start_monotonic_ns = start_monotonic_ns_;
  std::string stem = options_.out_dir + "/" + (options_.run_id.empty() ? "leaseguard" : options_.run_id) + "." +
                     std::to_string(getpid());
  // Never overwrite: an exec'd image of the same pid, or a recycled pid, gets the next name.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string path = stem + (attempt == 0 ? "" : "." + std::to_string(attempt)) + ".journal";
    std::string attempt_error;
    if (journal_.open(path, header, attempt_error)) {
      std::vector<unsigned char> process = process_payload();
      journal_.append(journal::RecordType::Process, process.data(), process.size());
      write_lease_begin(leases_.process_lease());
      log_debug("journal %s", path.c_str());
      return true;
    }
    if (errno != EEXIST) {
      error = attempt_error;
      return false;
    }
    struct stat existing;
    if (lstat(path.c_str(), &existing) == 0 && S_ISLNK(existing.st_mode)) {
      // Someone planted a link where our journal goes: refuse rather than pick another name.
      error = path + " is a symbolic link; refusing to write a journal there";
      return false;
    }
  }
  error = "too many journals named " + stem + ".*.journal";
  return false;
}

bool Tracker::ensure_journal() noexcept {
  int state = journal_state_.load(std::memory_order_acquire);
  if (state != 0) return state == 1;
  std::lock_guard lock(journal_open_mutex_);
  state = journal_state_.load(std::memory_order_relaxed);
  if (state != 0) return state == 1;
  std::string error;
  bool opened = false;
  try {
    opened = open_journal(error);
  } catch (...) {
    error = "out of memory";
  }
  if (!opened) log_warning("%s; continuing without recording", error.c_str());
  journal_state_.store(opened ? 1 : 2, std::memory_order_release);
  return opened;
}

void Tracker::write_lease_begin(const Lease &lease) noexcept {
  char buffer[sizeof(journal::LeaseBeginPayload) + 256];
  journal::LeaseBeginPayload begin{};
  begin.lease_id = lease.id;
  begin.ttl_ms = lease.ttl_ms;
  begin.time_ns = lease.begin_ns;
  begin.policy = static_cast<uint8_t>(lease.policy);
  size_t name_bytes = lease.name.size() < 256 ? lease.name.size() : 256;
  begin.name_bytes = static_cast<uint32_t>(name_bytes);
  std::memcpy(buffer, &begin, sizeof begin);
  std::memcpy(buffer + sizeof begin, lease.name.data(), name_bytes);
  journal_.append(journal::RecordType::LeaseBegin, buffer, sizeof begin + name_bytes);
}

Lease &Tracker::current_lease() noexcept {
  for (int i = t_entered_depth - 1; i >= 0; --i)
    if (!t_entered[i]->ended.load(std::memory_order_relaxed)) return *t_entered[i];
  return leases_.process_lease();
}

uint32_t Tracker::capture_and_intern() noexcept {
  if (options_.stack_depth <= 0) return 0;
  uintptr_t frames[kMaxStackDepth];
  size_t depth = capture_stack(frames, static_cast<size_t>(options_.stack_depth), excluded_);
  try {
    return stacks_.intern(frames, depth, journal_);
  } catch (...) {
    return 0;  // out of memory: the allocation is still recorded, without its stack
  }
}

void Tracker::on_alloc(const AllocationEvent &event) noexcept {
  const bool journaling = ensure_journal();
  HandleRecord record;
  record.id = next_allocation_id_.fetch_add(1, std::memory_order_relaxed);
  record.address = event.address;
  record.bytes = event.bytes;
  record.time_ns = monotonic_ns();
  record.context = event.context;
  record.stack_id = journaling ? capture_and_intern() : 0;
  record.lease_id = current_lease().id;
  record.thread = thread_id();
  record.device = event.device;
  record.api = event.api;
  record.kind = event.kind;

  journal::AllocPayload alloc{};
  alloc.id = record.id;
  alloc.address = record.address;
  alloc.bytes = record.bytes;
  alloc.time_ns = record.time_ns;
  alloc.context = record.context;
  alloc.stack_id = record.stack_id;
  alloc.lease_id = record.lease_id;
  alloc.thread = record.thread;
  alloc.api = static_cast<uint16_t>(record.api);
  alloc.kind = static_cast<uint8_t>(record.kind);
  alloc.device = static_cast<int8_t>(record.device >= -1 && record.device <= 127 ? record.device : -1);
  try {
    // The record is written while the table holds the address's lock, so a free of the same
    // address on another thread is always journaled after it.
    std::optional<HandleRecord> displaced = table_.insert(record, [&] {
      if (journaling) journal_.append(journal::RecordType::Alloc, &alloc, sizeof alloc);
    });
    if (displaced && journaling) {
      // The driver handed this address out again, so the old allocation was freed by a path
      // leaseguard did not see. Close it in the journal so it is not reported as a leak.
      journal::FreePayload implicit{};
      implicit.id = displaced->id;
      implicit.address = displaced->address;
      implicit.time_ns = record.time_ns;
      implicit.thread = record.thread;
      implicit.api = static_cast<uint16_t>(Api::Unknown);
      implicit.flags = journal::kFreeImplicit;
      journal_.append(journal::RecordType::Free, &implicit, sizeof implicit);
    }
  } catch (...) {
    log_debug("out of memory recording an allocation");
  }
}

bool Tracker::on_free(Api api, uint64_t address) noexcept {
  const bool journaling = journal_state_.load(std::memory_order_acquire) == 1;
  journal::FreePayload free_record{};
  free_record.address = address;
  free_record.time_ns = monotonic_ns();
  free_record.thread = thread_id();
  free_record.api = static_cast<uint16_t>(api);
  std::optional<HandleRecord> record = table_.remove(address, [&](const HandleRecord *removed) {
    if (!journaling) return;
    free_record.id = removed != nullptr ? removed->id : 0;
    free_record.flags = removed != nullptr ? 0 : journal::kFreeUnknown;
    journal_.append(journal::RecordType::Free, &free_record, sizeof free_record);
  });
  return record.has_value();
}

void Tracker::on_context_destroyed(Api api, uint64_t context, int32_t device) noexcept {
  std::vector<HandleRecord> freed;
  try {
    // Stream-ordered memory belongs to its pool and outlives the context, as on the driver.
    freed = table_.remove_if([context](const HandleRecord &record) {
      return record.context == context && record.kind != Kind::Async;
    });
  } catch (...) {
  }
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  journal::ContextDestroyPayload destroy{};
  destroy.context = context;
  destroy.time_ns = monotonic_ns();
  destroy.api = static_cast<uint16_t>(api);
  destroy.device = device;
  journal_.append(journal::RecordType::ContextDestroy, &destroy, sizeof destroy);
  size_t leaked = 0;
  for (const HandleRecord &record : freed) leaked += record.reported ? 0 : 1;
  if (leaked > 0)
    log_debug("context %#llx destroyed with %zu live allocation(s)", static_cast<unsigned long long>(context), leaked);
}

uint64_t Tracker::lease_begin(const char *name, uint64_t ttl_ms, Policy policy) noexcept {
  try {
    Lease &lease = leases_.begin(name != nullptr && *name != '\0' ? name : "lease", ttl_ms, policy, monotonic_ns());
    if (ensure_journal()) write_lease_begin(lease);
    return lease.id;
  } catch (...) {
    return 0;
  }
}

size_t Tracker::end_lease(Lease &lease, EndedBy ended_by) noexcept {
  size_t leaked = table_.mark_lease_reported(lease.id);
  if (journal_state_.load(std::memory_order_acquire) == 1) {
    journal::LeaseEndPayload end{};
    end.lease_id = lease.id;
    end.ended_by = static_cast<uint8_t>(ended_by);
    end.time_ns = monotonic_ns();
    end.leaked_allocations = leaked;
    journal_.append(journal::RecordType::LeaseEnd, &end, sizeof end);
  }
  if (leaked > 0 && ended_by != EndedBy::Exit)
    log_info("lease %u \"%s\" %s with %zu leaked allocation(s)", lease.id, lease.name.c_str(),
             ended_by == EndedBy::Expiry ? "expired" : "ended", leaked);
  return leaked;
}

int Tracker::lease_end(uint64_t lease_id) noexcept {
  if (lease_id == 0 || lease_id > UINT32_MAX) return -1;
  Lease *lease = leases_.find(static_cast<uint32_t>(lease_id));
  if (lease == nullptr || !LeaseRegistry::try_end(*lease)) return -1;
  size_t leaked = end_lease(*lease, EndedBy::End);
  return leaked > static_cast<size_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(leaked);
}

int Tracker::lease_enter(uint64_t lease_id) noexcept {
  if (lease_id == 0 || lease_id > UINT32_MAX) return -1;
  Lease *lease = leases_.find(static_cast<uint32_t>(lease_id));
  if (lease == nullptr || lease->ended.load() || t_entered_depth == kMaxEnteredLeases) return -1;
  t_entered[t_entered_depth++] = lease;
  return 0;
}

int Tracker::lease_leave() noexcept {
  if (t_entered_depth == 0) return -1;
  --t_entered_depth;
  return 0;
}

void Tracker::on_expired(Lease &lease) noexcept {
  if (!LeaseRegistry::try_end(lease)) return;
  end_lease(lease, EndedBy::Expiry);
  if (lease.policy == Policy::Abort) {
    log_warning("lease %u \"%s\" expired with policy abort", lease.id, lease.name.c_str());
    std::raise(SIGABRT);
  }
}

void Tracker::finish_process() noexcept {
  if (finished_) return;
  finished_ = true;
  leases_.stop_watchdog();
  for (Lease *lease : leases_.open_leases())
    if (LeaseRegistry::try_end(*lease)) end_lease(*lease, EndedBy::Exit);
  if (journal_state_.load(std::memory_order_acquire) != 1) return;
  journal::ProcessEndPayload end{};
  end.time_ns = monotonic_ns();
  end.dropped_records = journal_.dropped();
  journal_.append(journal::RecordType::ProcessEnd, &end, sizeof end);
}

}  // namespace leaseguard
