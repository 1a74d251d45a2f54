// leaseguard's own threads (see background_thread.h).
#include "background_thread.h"

#include <signal.h>

#include <utility>

namespace leaseguard {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

BackgroundThread::~BackgroundThread() { join(); }

bool BackgroundThread::start(const char *name, size_t stack_bytes, std::function<void()> body) noexcept {
  if (started_) return false;
  try {
    body_ = std::move(body);
  } catch (...) {
    return false;
  }
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) return false;
  // Sanitizers keep shadow and fake frames on the stack: leave them the default.
  if (!kSanitized) pthread_attr_setstacksize(&attributes, stack_bytes);
  // Created with every signal blocked, so none is ever delivered to it (it inherits the mask).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int created = pthread_create(&thread_, &attributes, &BackgroundThread::run, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attributes);
  if (created != 0) return false;
  started_ = true;
  pthread_setname_np(thread_, name);
  return true;
}

bool BackgroundThread::is_current() const noexcept { return started_ && pthread_equal(thread_, pthread_self()); }

void BackgroundThread::join() noexcept {
  if (!started_ || is_current()) return;
  pthread_join(thread_, nullptr);
  started_ = false;
}

void *BackgroundThread::run(void *self) noexcept {
  auto *thread = static_cast<BackgroundThread *>(self);
  thread->body_();
  return nullptr;
}

}  // namespace leaseguard
