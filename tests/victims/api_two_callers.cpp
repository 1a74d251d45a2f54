// Leaks through GpuSession::mem_alloc from one call site reached from two callers in turn,
// 50 times each: every leak's stack must name its own caller. The API tells the core where
// the program's stack begins, and both calls begin at the same place with the same stack
// pointer, so a thread's last walk must be checked word by word each time, never trusted.
#include <leaseguard/session.hpp>

#include <cstdio>
#include <vector>

std::vector<leaseguard::GpuMemHandle> g_kept;  // alive when the session ends: its leaks

__attribute__((noinline)) void allocate_here(leaseguard::GpuSession &session, std::size_t bytes) {
  g_kept.push_back(session.mem_alloc(bytes));
  __asm__ volatile("");
}

__attribute__((noinline)) void through_a(leaseguard::GpuSession &session) {
  allocate_here(session, 100);
  __asm__ volatile("");
}

__attribute__((noinline)) void through_b(leaseguard::GpuSession &session) {
  allocate_here(session, 200);
  __asm__ volatile("");
}

int main() {
  {
    leaseguard::GpuSession session({.name = "two-callers", .on_expiry = leaseguard::OnExpiry::Report});
    for (int i = 0; i < 50; ++i) {
      through_a(session);
      through_b(session);
    }
  }
  std::printf("kept %zu handles past their session\n", g_kept.size());
  g_kept.clear();
  return 0;
}
