// Handles dropped at process exit, after their session is gone: one whose session reclaimed
// it (default policy), one whose session only reported it (its drop frees it late), and
// one from a session that never ended before exit. The program must exit 0 with or without
// the preload.
#include <leaseguard/session.hpp>

#include <cstdio>

leaseguard::GpuMemHandle g_reclaimed;
leaseguard::GpuMemHandle g_reported;
leaseguard::GpuMemHandle g_open;
leaseguard::GpuSession *g_never_ended = nullptr;

int main() {
  {
    leaseguard::GpuSession reclaiming({.name = "reclaiming"});
    g_reclaimed = reclaiming.mem_alloc(1000);
  }
  {
    leaseguard::GpuSession reporting({.name = "reporting", .on_expiry = leaseguard::OnExpiry::Report});
    g_reported = reporting.mem_alloc(2000);
  }
  g_never_ended = new leaseguard::GpuSession({.name = "never-ended"});  // deliberately never deleted
  g_open = g_never_ended->mem_alloc(3000);
  std::printf("exiting with three handles alive\n");
  return 0;
}
