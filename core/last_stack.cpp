// Implementation of each thread's last stack (see last_stack.h).
#include "last_stack.h"

#include <pthread.h>

#include <new>

namespace leaseguard {
namespace {

// Initial-exec, as the core's other thread-local state (event_clock.h says why): a pointer
// and a flag, the records themselves on the heap (each holds two kilobytes of trace).
__thread LastStacks *t_last_stacks __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_in_capture __attribute__((tls_model("initial-exec"))) = false;

pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_key;
bool g_have_key = false;

void forget_at_thread_exit(void *stacks) {
  delete static_cast<LastStacks *>(stacks);
  t_last_stacks = nullptr;
}

void make_key() { g_have_key = pthread_key_create(&g_key, forget_at_thread_exit) == 0; }

}  // namespace

ThisThreadsLastStack::ThisThreadsLastStack() noexcept {
  if (t_in_capture) return;
  t_in_capture = true;
  claimed_ = true;
  // The flag is set before the record is touched, as a signal handler on this thread sees it.
  __asm__ volatile("" ::: "memory");
  if (t_last_stacks == nullptr) {
    pthread_once(&g_key_once, make_key);
    if (!g_have_key) return;
    auto *made = new (std::nothrow) LastStacks;
    if (made == nullptr) return;
    if (pthread_setspecific(g_key, made) != 0) {
      delete made;
      return;
    }
    t_last_stacks = made;
  }
  stacks_ = t_last_stacks;
}

ThisThreadsLastStack::~ThisThreadsLastStack() {
  if (!claimed_) return;
  __asm__ volatile("" ::: "memory");
  t_in_capture = false;
}

}  // namespace leaseguard
