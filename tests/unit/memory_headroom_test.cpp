// memory_headroom (core/reachability/memory_headroom.h) over directories laid out as a machine's /proc and
// cgroup file systems are, as the kernel writes them.
#include "memory_headroom.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_support.h"

namespace leaseguard {
namespace {

constexpr uint64_t kMiB = 1 << 20;

const char *const kMountinfo =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const char *const kCgroups = "4:memory:/pod/job\n1:cpu:/elsewhere\n0::/slice/unit.service\n";
const uint64_t kUnlimitedV1 = 9223372036854771712u;

class Machine {
 public:
  void write(const std::string &path, const std::string &text) {
    const std::filesystem::path file = dir_.path() + path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  void v1(const std::string &cgroup, uint64_t limit, uint64_t usage, uint64_t inactive = 0) {
    const std::string at = "/sys/fs/cgroup/memory" + cgroup;
    write(at + "/memory.limit_in_bytes", std::to_string(limit) + "\n");
    write(at + "/memory.usage_in_bytes", std::to_string(usage) + "\n");
    write(at + "/memory.stat",
          "cache 0\ninactive_file 7\ntotal_cache 0\ntotal_inactive_file " + std::to_string(inactive) + "\n");
  }
  void v2(const std::string &cgroup, const std::string &max, uint64_t current, uint64_t inactive = 0) {
    const std::string at = "/sys/fs/cgroup/unified" + cgroup;
    write(at + "/memory.max", max + "\n");
    write(at + "/memory.current", std::to_string(current) + "\n");
    write(at + "/memory.stat", "anon 5\nfile 9\nactive_file 1\ninactive_file " + std::to_string(inactive) + "\n");
  }
  // /proc as a process in both hierarchies sees it, with 8,000,000 kB available.
  void in_both_hierarchies() {
    write("/proc/meminfo", "MemTotal:       24683756 kB\nMemAvailable:    8000000 kB\nBuffers: 1 kB\n");
    write("/proc/self/mountinfo", kMountinfo);
    write("/proc/self/cgroup", kCgroups);
  }
  uint64_t headroom() const { return memory_headroom(dir_.path()); }

 private:
  testing::TempDir dir_;
};

TEST(MemoryHeadroom, TheTightestLimitOfEveryLevelAndHierarchyBinds) {
  Machine machine;
  machine.in_both_hierarchies();
  machine.v1("", kUnlimitedV1, 20000 * kMiB);
  machine.v1("/pod", 1024 * kMiB, 900 * kMiB, 100 * kMiB);  // 800 MiB in use besides its cache
  machine.v1("/pod/job", kUnlimitedV1, 500 * kMiB);
  EXPECT_EQ(machine.headroom(), 224 * kMiB);

  machine.v2("/slice", std::to_string(2048 * kMiB), 1948 * kMiB);
  machine.v2("/slice/unit.service", "max", 1000 * kMiB);
  EXPECT_EQ(machine.headroom(), 100 * kMiB);

  machine.v2("/slice/unit.service", std::to_string(1200 * kMiB), 1190 * kMiB, 40 * kMiB);
  EXPECT_EQ(machine.headroom(), 50 * kMiB);
}

TEST(MemoryHeadroom, WithoutLimitsTheMachinesAvailableMemoryBinds) {
  Machine machine;
  machine.in_both_hierarchies();
  machine.v1("/pod", kUnlimitedV1, 900 * kMiB);
  machine.v2("/slice/unit.service", "max", 1000 * kMiB);
  EXPECT_EQ(machine.headroom(), uint64_t{8000000} * 1024);
}

TEST(MemoryHeadroom, NothingReadableLimitsNothing) {
  Machine machine;
  EXPECT_EQ(machine.headroom(), kNoMemoryLimit);
  machine.write("/proc/self/mountinfo", kMountinfo);
  machine.write("/proc/self/cgroup", "garbage\n:::\n");
  EXPECT_EQ(machine.headroom(), kNoMemoryLimit);
}

TEST(MemoryHeadroom, ACgroupOverItsLimitHasNone) {
  Machine machine;
  machine.write("/proc/self/mountinfo", kMountinfo);
  machine.write("/proc/self/cgroup", "4:memory:/pod\n");
  machine.v1("/pod", 100 * kMiB, 120 * kMiB);
  EXPECT_EQ(machine.headroom(), 0u);
}

// Inside a cgroup namespace, or a container given a part of the tree, the mount's root is the
// process's cgroup or above it, and paths are read below the mount point from there.
TEST(MemoryHeadroom, AMountOfPartOfTheTreeIsReadFromItsRoot) {
  Machine machine;
  machine.write("/proc/self/mountinfo",
                "34 30 0:31 /kubepods/pod\\0401 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  machine.write("/proc/self/cgroup", "4:memory:/kubepods/pod 1/job\n");
  machine.v1("", 600 * kMiB, 100 * kMiB);  // the pod's own level, mounted as the root
  machine.v1("/job", 300 * kMiB, 250 * kMiB);
  EXPECT_EQ(machine.headroom(), 50 * kMiB);
}

}  // namespace
}  // namespace leaseguard
