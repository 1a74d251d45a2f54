// Implementation of the lease registry and its expiry watchdog.
#include "leases.h"

#include "event_clock.h"
#include "lg_assert.h"
#include "log.h"

#include <time.h>

#include <algorithm>
#include <chrono>

namespace leaseguard {
namespace {

uint64_t deadline_for(uint64_t begin_ns, uint64_t ttl_ms) {
  if (ttl_ms == 0) return 0;
  if (ttl_ms > (UINT64_MAX - begin_ns) / 1'000'000ull) return UINT64_MAX;  // effectively never
  return begin_ns + ttl_ms * 1'000'000ull;
}

}  // namespace

LeaseRegistry::LeaseRegistry(uint64_t process_begin_ns, uint64_t process_ttl_ms, Policy process_policy,
                             ExpiryCallback on_expiry, uint64_t process_deadline_ns)
    : on_expiry_(std::move(on_expiry)) {
  auto lease = std::make_unique<Lease>();
  lease->id = kProcessLeaseId;
  lease->name = "process";
  lease->ttl_ms = process_ttl_ms;
  lease->policy = process_policy;
  lease->begin_ns = process_begin_ns;
  lease->deadline_ns = deadline_for(process_begin_ns, process_ttl_ms);
  if (process_deadline_ns != 0 && (lease->deadline_ns == 0 || process_deadline_ns < lease->deadline_ns))
    lease->deadline_ns = process_deadline_ns;
  process_ = lease.get();
  leases_.emplace(kProcessLeaseId, std::move(lease));
  LG_ASSERT(leases_.size() == 1 && leases_.at(kProcessLeaseId).get() == process_);  // lease 1 is the process's
  if (process_->deadline_ns != 0) arm(*process_);
}

LeaseRegistry::~LeaseRegistry() { stop_watchdog(); }

Lease &LeaseRegistry::begin(std::string name, uint64_t ttl_ms, Policy policy, uint64_t now_ns, bool classify_at_end) {
  auto lease = std::make_unique<Lease>();
  lease->classify_at_end = classify_at_end;
  lease->name = std::move(name);
  lease->ttl_ms = ttl_ms;
  lease->policy = policy;
  lease->begin_ns = now_ns;
  lease->deadline_ns = deadline_for(now_ns, ttl_ms);
  Lease &result = *lease;
  // Read before publishing: once in the map, the watchdog owns deadline_ns.
  const bool has_deadline = lease->deadline_ns != 0;
  {
    std::lock_guard lock(mutex_);
    LG_ASSERT(next_id_ > kProcessLeaseId && next_id_ != 0);  // ids never repeat, never 0 nor the process's
    lease->id = next_id_++;
    [[maybe_unused]] const bool added = leases_.emplace(lease->id, std::move(lease)).second;
    LG_ASSERT(added);
  }
  if (has_deadline) arm(result);
  return result;
}

Lease *LeaseRegistry::find(uint32_t id) {
  std::lock_guard lock(mutex_);
  auto it = leases_.find(id);
  LG_ASSERT(it == leases_.end() || it->second->id == id);
  return it == leases_.end() ? nullptr : it->second.get();
}

std::vector<Lease *> LeaseRegistry::open_leases() {
  std::vector<Lease *> open;
  {
    std::lock_guard lock(mutex_);
    for (auto &[id, lease] : leases_)
      if (!lease->ended.load()) open.push_back(lease.get());
  }
  std::sort(open.begin(), open.end(), [](const Lease *a, const Lease *b) { return a->id > b->id; });
  // Newest first, so the process lease (the oldest) is last when it is open.
  LG_ASSERT(open.empty() || open.back()->id == kProcessLeaseId || process_->ended.load());
  return open;
}

std::vector<const Lease *> LeaseRegistry::open_at_fork() const {
  std::vector<const Lease *> open;
  for (const auto &[id, lease] : leases_)  // NOLINT: the lock is the forking thread's (see the header)
    if (id != kProcessLeaseId && !lease->ended.load()) open.push_back(lease.get());
  std::sort(open.begin(), open.end(), [](const Lease *a, const Lease *b) { return a->id < b->id; });
  return open;
}

Lease &LeaseRegistry::inherit(const Lease &parent) {
  auto lease = std::make_unique<Lease>();
  lease->id = parent.id;
  lease->name = parent.name;
  lease->ttl_ms = parent.ttl_ms;
  lease->policy = parent.policy;
  lease->begin_ns = parent.begin_ns;
  lease->deadline_ns = parent.deadline_ns;
  lease->classify_at_end = parent.classify_at_end;
  lease->inherited = true;
  Lease &result = *lease;
  const bool has_deadline = lease->deadline_ns != 0;
  {
    std::lock_guard lock(mutex_);
    if (next_id_ <= parent.id) next_id_ = parent.id + 1;  // ids never repeat in the child either
    leases_.emplace(parent.id, std::move(lease));
  }
  if (has_deadline) arm(result);
  return result;
}

// The watchdog's stack: it ends leases, which reclaims through the driver (whose calls may
// go deep) and formats log lines.
constexpr size_t kWatchdogStackBytes = size_t{512} << 10;

void LeaseRegistry::arm(Lease &) {
  std::lock_guard lock(mutex_);
  if (stopping_ || stopped_for_good_) return;
  start_watchdog_locked();
  wake_.notify_all();
}

void LeaseRegistry::start_watchdog_locked() {
  if (watchdog_running_) return;
  if (!watchdog_.start("leaseguard-ttl", kWatchdogStackBytes, [this] { watch(); })) {
    log_warning("cannot start the lease watchdog thread; time-to-live and deadlines are not enforced");
    return;
  }
  watchdog_running_ = true;
  log_debug("expiry watchdog started");
}

void LeaseRegistry::check_every(uint64_t period_ns, std::function<void()> check) {
  std::lock_guard lock(mutex_);
  if (period_ns == 0 || stopping_ || stopped_for_good_) return;
  check_ = std::move(check);
  check_period_ns_ = period_ns;
  next_check_ns_ = now_ns() + period_ns;
  start_watchdog_locked();
  wake_.notify_all();
}

// How often the waiting watchdog looks whether the program's main thread has ended.
constexpr std::chrono::nanoseconds kMainThreadLook = std::chrono::seconds(1);

bool LeaseRegistry::leave_if_main_ended() {
  if (!BackgroundThread::main_thread_ended()) return false;
  // Its time-to-lives and checks are no longer enforced: the process ends with its last
  // thread of its own, as without leaseguard (background_thread.h says why).
  stopped_for_good_ = true;
  return true;
}

void LeaseRegistry::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    Lease *due = nullptr;
    uint64_t earliest = 0;
    for (auto &[id, lease] : leases_) {
      if (lease->deadline_ns == 0 || lease->ended.load()) continue;
      if (due == nullptr || lease->deadline_ns < earliest) {
        due = lease.get();
        earliest = lease->deadline_ns;
      }
    }
    const bool check_first = check_period_ns_ != 0 && (due == nullptr || next_check_ns_ < earliest);
    if (check_first) earliest = next_check_ns_;
    if (due == nullptr && !check_first) {
      if (wake_.wait_for(lock, kMainThreadLook) == std::cv_status::timeout && leave_if_main_ended()) return;
      continue;
    }
    uint64_t now = now_ns();
    if (now < earliest) {
      const auto wait = std::min(std::chrono::nanoseconds(earliest - now), kMainThreadLook);
      if (wake_.wait_for(lock, wait) == std::cv_status::timeout && leave_if_main_ended()) return;
      continue;
    }
    if (check_first) {
      lock.unlock();
      check_();
      lock.lock();
      next_check_ns_ = now_ns() + check_period_ns_;
      continue;
    }
    LG_ASSERT(earliest != 0 && due->deadline_ns == earliest);  // only the watchdog changes a published deadline
    due->deadline_ns = 0;                                      // fires once
    lock.unlock();
    on_expiry_(*due);
    lock.lock();
  }
}

void LeaseRegistry::stop_watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stopped_for_good_ = true;  // arm() starts no thread from now on
    wake_.notify_all();
  }
  // Joined, so that no thread of ours outlives the end of recording (and a sanitizer sees
  // none leaked); never from the watchdog itself, which is left to finish on its own.
  watchdog_.join();
}

uint64_t LeaseRegistry::now_ns() const { return monotonic_ns() + clock_ahead_ns_; }

void LeaseRegistry::advance_clock(uint64_t ns) {
  std::lock_guard lock(mutex_);
  clock_ahead_ns_ += ns;
  wake_.notify_all();
}

void LeaseRegistry::suspend_watchdog() {
  {
    std::lock_guard lock(mutex_);
    if (!watchdog_running_ || watchdog_.is_current()) return;
    stopping_ = true;
    wake_.notify_all();
  }
  watchdog_.join();
  std::lock_guard lock(mutex_);
  watchdog_running_ = false;
  stopping_ = stopped_for_good_;
}

void LeaseRegistry::resume_watchdog() {
  std::lock_guard lock(mutex_);
  if (stopping_ || stopped_for_good_) return;
  if (check_period_ns_ != 0) {
    start_watchdog_locked();
    return;
  }
  for (auto &[id, lease] : leases_) {
    if (lease->deadline_ns != 0 && !lease->ended.load()) {
      start_watchdog_locked();
      return;
    }
  }
}

}  // namespace leaseguard
