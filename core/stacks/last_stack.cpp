// Implementation of each thread's last stack (see last_stack.h).
#include "last_stack.h"

#include <pthread.h>

#include <new>

namespace leaseguard {
namespace detail {

__thread LastStacks *t_last_stacks __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_in_capture __attribute__((tls_model("initial-exec"))) = false;

}  // namespace detail
namespace {

pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_key;
bool g_have_key = false;

void forget_at_thread_exit(void *stacks) {
  delete static_cast<LastStacks *>(stacks);
  detail::t_last_stacks = nullptr;
}

void make_key() { g_have_key = pthread_key_create(&g_key, forget_at_thread_exit) == 0; }

}  // namespace

LastStacks *detail::make_this_threads_last_stacks() noexcept {
  pthread_once(&g_key_once, make_key);
  if (!g_have_key) return nullptr;
  auto *made = new (std::nothrow) LastStacks;
  if (made == nullptr) return nullptr;
  if (pthread_setspecific(g_key, made) != 0) {
    delete made;
    return nullptr;
  }
  t_last_stacks = made;
  return made;
}

}  // namespace leaseguard
