// A session with a time-to-live: a worker that outlives its budget has its leftovers
// reclaimed by leaseguard, and dropping its handles afterwards is harmless.
//
//   leaseguard run --sim -- build/examples/api_ttl_session
#include <leaseguard/session.hpp>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  using namespace std::chrono_literals;
  std::vector<leaseguard::GpuMemHandle> cache;  // outlives the session on purpose
  {
    leaseguard::GpuSession job({.name = "job-42", .ttl = 500ms, .on_expiry = leaseguard::OnExpiry::Reclaim});
    for (int i = 0; i < 4; ++i) cache.push_back(job.mem_alloc(1 << 20));
    while (!job.expired()) std::this_thread::sleep_for(10ms);  // over budget: the lease expires and reclaims
    std::printf("expired: %s, first buffer freed: %s\n", job.expired() ? "yes" : "no", cache[0].freed() ? "yes" : "no");
    try {
      job.mem_alloc(16);
    } catch (const leaseguard::Error &error) {
      std::printf("after expiry: %s\n", error.what());
    }
  }
  cache.clear();  // late drops: nothing is freed twice
  std::printf("done\n");
  return 0;
}
