// The preload's longjmp, _longjmp, siglongjmp and __longjmp_chk: each tells the hooks and the
// heap table which of their calls the jump leaves (stack_jump.h), then makes the C library's
// jump. A thread inside none of them jumps at once.
#include <dlfcn.h>

#include <csetjmp>
#include <csignal>

#include "heap_tracker.h"
#include "preload_state.h"
#include "real_dlsym.h"
#include "jump_hooks.h"

extern "C" void __longjmp_chk(struct __jmp_buf_tag env[1], int value) __attribute__((noreturn));

namespace leaseguard::interpose {

void jumping_to(const StackJump &jump) noexcept {
  ReentryGuard::jumping_to(jump);
  heap::jumping_to(jump);
}

namespace {

using JumpFunction = void (*)(struct __jmp_buf_tag *, int);

struct JumpFunctions {
  JumpFunction longjmp_ = nullptr;
  JumpFunction underscore_longjmp = nullptr;
  JumpFunction siglongjmp_ = nullptr;
  JumpFunction longjmp_chk = nullptr;
};
JumpFunctions g_next;

// The stack pointer a jump buffer restores. glibc keeps it mangled with the thread's pointer
// guard (x86-64: xor with %fs:0x30, then rotated left by 17). Elsewhere 0: nothing is taken
// as left.
uintptr_t target_stack_pointer(const struct __jmp_buf_tag *env) noexcept {
#if defined(__x86_64__) && defined(__GLIBC__)
  auto pointer = static_cast<uintptr_t>(env->__jmpbuf[6]);
  asm("ror $0x11, %0\n\txor %%fs:0x30, %0" : "+r"(pointer));
  return pointer;
#else
  (void)env;
  return 0;
#endif
}

[[noreturn]] void jump(JumpFunction &next, const char *name, struct __jmp_buf_tag *env, int value) noexcept {
  if (__builtin_expect(inside_leaseguard(), false)) {
    if (const uintptr_t target = target_stack_pointer(env); target != 0) jumping_to(StackJump(target));
  }
  if (__builtin_expect(next == nullptr, false)) next = real_symbol<JumpFunction>(RTLD_NEXT, name);
  next(env, value);
  __builtin_unreachable();
}

}  // namespace

void resolve_jump_functions() noexcept {
  find_symbol(g_next.longjmp_, RTLD_NEXT, "longjmp");
  find_symbol(g_next.underscore_longjmp, RTLD_NEXT, "_longjmp");
  find_symbol(g_next.siglongjmp_, RTLD_NEXT, "siglongjmp");
  find_symbol(g_next.longjmp_chk, RTLD_NEXT, "__longjmp_chk");
}

}  // namespace leaseguard::interpose

using leaseguard::interpose::g_next;
using leaseguard::interpose::jump;

extern "C" __attribute__((visibility("default"))) void longjmp(struct __jmp_buf_tag env[1], int value) {
  jump(g_next.longjmp_, "longjmp", env, value);
}
extern "C" __attribute__((visibility("default"))) void _longjmp(struct __jmp_buf_tag env[1], int value) {
  jump(g_next.underscore_longjmp, "_longjmp", env, value);
}
extern "C" __attribute__((visibility("default"))) void siglongjmp(struct __jmp_buf_tag env[1], int value) {
  jump(g_next.siglongjmp_, "siglongjmp", env, value);
}
extern "C" __attribute__((visibility("default"))) void __longjmp_chk(struct __jmp_buf_tag env[1], int value) {
  jump(g_next.longjmp_chk, "__longjmp_chk", env, value);
}
