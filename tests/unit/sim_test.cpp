// The simulated driver on its own: alignment, capacity, invalid frees, context teardown,
// fault injection. Its settings are read once per process, so this is its own executable
// and main() sets them first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

extern "C" uint64_t leaseguard_sim_call_count(const char *name);

namespace {

// Each test holds one reference to device 0's primary context, and gives it back: the tests
// share one process when the binary runs whole, and a reference left behind would keep the
// context alive into the next test.
class Sim : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary_, 0), CUDA_SUCCESS);
    primary_retained_ = true;
    ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (primary_retained_) {
      EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    }
  }
  CUcontext primary_ = nullptr;
  bool primary_retained_ = false;  // false once a test released SetUp's reference itself
};

TEST_F(Sim, AllocationsAre256ByteAlignedAndUsable) {
  std::vector<CUdeviceptr> pointers;
  for (size_t bytes : {1, 7, 255, 257, 4096, 100000, 3 << 20}) {
    CUdeviceptr pointer = 0;
    ASSERT_EQ(cuMemAlloc_v2(&pointer, bytes), CUDA_SUCCESS);
    EXPECT_EQ(pointer % 256, 0u);
    ASSERT_EQ(cuMemsetD8_v2(pointer, 0x5a, bytes), CUDA_SUCCESS);
    std::vector<unsigned char> back(bytes);
    ASSERT_EQ(cuMemcpyDtoH_v2(back.data(), pointer, bytes), CUDA_SUCCESS);
    EXPECT_EQ(back[bytes - 1], 0x5a);
    pointers.push_back(pointer);
  }
  for (CUdeviceptr pointer : pointers) EXPECT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
}

// The mapping of /proc/self/maps that holds `address`.
struct MapsLine {
  uintptr_t begin = 0;
  std::string permissions, name;  // name: "" where anonymous
};
bool mapping_holding(uintptr_t address, MapsLine &found) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, offset, device, inode;
    fields >> range >> found.permissions >> offset >> device >> inode;
    const uintptr_t from = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const uintptr_t to = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (address < from || address >= to) continue;
    found.begin = from;
    found.name.clear();
    fields >> found.name;
    return true;
  }
  return false;
}

// As on a device, device addresses are never the host heap's, nor where a host mapping may
// be made once they are freed, so that no host block the program allocates lies where freed
// device memory was; the byte before an allocation is device space too (the same mapping, or
// the simulator's reserved and inaccessible one), so that no pointer to the end of another
// mapping (a thread's stack top) points into one; and memory allocated again reads as zeros,
// never as what the last allocation there held.
TEST_F(Sim, DeviceMemoryLiesInASpaceOfItsOwn) {
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{4351}, size_t{65536}, size_t{100000}, size_t{3} << 20}) {
    SCOPED_TRACE(bytes);
    CUdeviceptr first = 0;
    ASSERT_EQ(cuMemAlloc_v2(&first, bytes), CUDA_SUCCESS);
    MapsLine holding, below;
    ASSERT_TRUE(mapping_holding(first, holding));
    EXPECT_EQ(holding.name, "");
    ASSERT_TRUE(mapping_holding(first - 1, below));
    EXPECT_TRUE(below.begin == holding.begin || below.permissions == "---p") << below.permissions;
    ASSERT_EQ(cuMemsetD8_v2(first, 0x5a, bytes), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree_v2(first), CUDA_SUCCESS);
    // What a driver keeping it in host memory would have asked of malloc for it.
    void *host = std::malloc(bytes + 255);
    const auto host_begin = reinterpret_cast<uintptr_t>(host);
    EXPECT_FALSE(first >= host_begin && first < host_begin + bytes + 255);
    CUdeviceptr again = 0;
    ASSERT_EQ(cuMemAlloc_v2(&again, bytes), CUDA_SUCCESS);
    std::vector<unsigned char> back(bytes, 1);
    ASSERT_EQ(cuMemcpyDtoH_v2(back.data(), again, bytes), CUDA_SUCCESS);
    EXPECT_EQ(std::count(back.begin(), back.end(), 0), static_cast<std::ptrdiff_t>(bytes));
    EXPECT_EQ(cuMemFree_v2(again), CUDA_SUCCESS);
    std::free(host);
  }
}

TEST_F(Sim, ZeroBytesNullOutputAndOutOfRangeCopiesAreRejected) {
  CUdeviceptr pointer = 0;
  EXPECT_EQ(cuMemAlloc_v2(&pointer, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAlloc_v2(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemAlloc_v2(&pointer, 64), CUDA_SUCCESS);
  char buffer[128];
  EXPECT_EQ(cuMemcpyDtoH_v2(buffer, pointer, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD_v2(pointer + 32, buffer, 32), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
}

TEST_F(Sim, CapacityIsEnforcedAndCommittedLazily) {
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{1} << 30);  // LEASEGUARD_SIM_CAPACITY=1G, set in main()
  CUdeviceptr big = 0, more = 0;
  ASSERT_EQ(cuMemAlloc_v2(&big, (size_t{1} << 30) - (size_t{1} << 20)), CUDA_SUCCESS);  // costs no memory yet
  EXPECT_EQ(cuMemAlloc_v2(&more, size_t{2} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAlloc_v2(&more, SIZE_MAX), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemFree_v2(big), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&more, size_t{2} << 20), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(more), CUDA_SUCCESS);
}

TEST_F(Sim, UnknownAndDoubleFreesAreInvalidValue) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(cuMemAlloc_v2(&pointer, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(pointer + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_ERROR_INVALID_VALUE);
  void *host = nullptr;
  ASSERT_EQ(cuMemAllocHost_v2(&host, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(host)), CUDA_ERROR_INVALID_VALUE);  // wrong family
  EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
}

TEST_F(Sim, ContextDestroyFreesItsAllocationsButNotPoolMemory) {
  CUcontext context = nullptr;
  ASSERT_EQ(cuCtxCreate_v4(&context, nullptr, 0, 0), CUDA_SUCCESS);
  CUdeviceptr plain = 0, pooled = 0;
  ASSERT_EQ(cuMemAlloc_v2(&plain, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&pooled, 64, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy_v2(context), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy_v2(context), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(plain), CUDA_ERROR_INVALID_VALUE);  // already gone
  EXPECT_EQ(cuMemFreeAsync(pooled, nullptr), CUDA_SUCCESS);  // survived
}

TEST_F(Sim, PrimaryContextResetAndLastReleaseFreeItsMemory) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(cuMemAlloc_v2(&pointer, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_ERROR_INVALID_VALUE);
  unsigned flags = 0;
  int active = 0;
  CUcontext extra = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&extra, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc_v2(&pointer, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);  // SetUp's retain is still held
  ASSERT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  primary_retained_ = false;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_ERROR_INVALID_VALUE);
}

// cuCtxGetId names a context for the process's life: a primary context made again after its
// last release keeps its handle here but not its id, and a destroyed one has none.
TEST_F(Sim, APrimaryContextMadeAgainHasTheSameHandleAndANewId) {
  unsigned long long first_id = 0;
  ASSERT_EQ(cuCtxGetId(primary_, &first_id), CUDA_SUCCESS);
  EXPECT_NE(first_id, 0u);
  unsigned long long current_id = 0;
  ASSERT_EQ(cuCtxGetId(nullptr, &current_id), CUDA_SUCCESS);  // the current context's
  EXPECT_EQ(current_id, first_id);
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  primary_retained_ = false;
  unsigned long long gone_id = 0;
  EXPECT_EQ(cuCtxGetId(primary_, &gone_id), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext again = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
  primary_retained_ = true;
  EXPECT_EQ(again, primary_);
  unsigned long long second_id = 0;
  ASSERT_EQ(cuCtxGetId(again, &second_id), CUDA_SUCCESS);
  EXPECT_NE(second_id, first_id);
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&created, 0, 0), CUDA_SUCCESS);
  unsigned long long created_id = 0;
  ASSERT_EQ(cuCtxGetId(created, &created_id), CUDA_SUCCESS);
  EXPECT_NE(created_id, second_id);
  ASSERT_EQ(cuCtxDestroy_v2(created), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
}

TEST_F(Sim, InjectedFaultHitsExactlyTheNthCall) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(cuMemAlloc_v2(&pointer, 64), CUDA_SUCCESS);
  // No other test calls this entry point, so its calls are this test's whatever the order.
  EXPECT_EQ(cuMemsetD32_v2_ptds(pointer, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<int>(cuMemsetD32_v2_ptds(pointer, 1, 4)), 999);  // LEASEGUARD_SIM_FAULTS: 2nd call
  EXPECT_EQ(cuMemsetD32_v2_ptds(pointer, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
}

TEST_F(Sim, ConcurrentAllocationAndFree) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([this] {
      ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
      for (int i = 0; i < 2000; ++i) {
        CUdeviceptr pointer = 0;
        ASSERT_EQ(cuMemAlloc_v2(&pointer, 64 + static_cast<size_t>(i)), CUDA_SUCCESS);
        ASSERT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
      }
    });
  for (auto &thread : threads) thread.join();
}

// Threads allocating at once take the driver's shards of their own, each granted capacity
// in steps: the device still gives out exactly its capacity, no more and no less, and a
// thread may free what another allocated.
TEST_F(Sim, ThreadsAllocatingAtOnceGetExactlyTheCapacity) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_before, &total), CUDA_SUCCESS);
  constexpr size_t kChunk = size_t{1} << 20;  // mapped, committed lazily: costs no memory
  constexpr int kThreads = 4;
  std::vector<std::vector<CUdeviceptr>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([this, &kept = held[static_cast<size_t>(t)]] {
      ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
      for (;;) {
        CUdeviceptr pointer = 0;
        const CUresult status = cuMemAlloc_v2(&pointer, kChunk);
        if (status == CUDA_ERROR_OUT_OF_MEMORY) return;
        ASSERT_EQ(status, CUDA_SUCCESS);
        kept.push_back(pointer);
      }
    });
  for (auto &thread : threads) thread.join();
  threads.clear();
  size_t chunks = 0;
  for (const auto &kept : held) chunks += kept.size();
  EXPECT_EQ(chunks, free_before / kChunk);
  size_t free_now = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before - chunks * kChunk);
  // Each thread frees the next one's, then the first of them again: not the driver's any more.
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([this, &kept = held[static_cast<size_t>(t + 1) % kThreads]] {
      ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
      for (CUdeviceptr pointer : kept) ASSERT_EQ(cuMemFree_v2(pointer), CUDA_SUCCESS);
      if (!kept.empty()) {
        EXPECT_EQ(cuMemFree_v2(kept.front()), CUDA_ERROR_INVALID_VALUE);
      }
    });
  for (auto &thread : threads) thread.join();
  ASSERT_EQ(cuMemGetInfo_v2(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before);
}

// Stream-ordered allocations are made in the calling thread's shard too, which counts its part
// of each pool: the pools' counts stay exact with threads allocating and freeing at once, and
// the high-water mark is what the first query saw at the top.
TEST_F(Sim, ThreadsMakingStreamOrderedAllocationsAtOnceKeepTheirPoolsCountsExact) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool made = nullptr, default_pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&made, &props), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&default_pool, 0), CUDA_SUCCESS);
  auto used = [](CUmemoryPool pool, CUmemPool_attribute attribute = CU_MEMPOOL_ATTR_USED_MEM_CURRENT) {
    cuuint64_t bytes = 0;
    EXPECT_EQ(cuMemPoolGetAttribute(pool, attribute, &bytes), CUDA_SUCCESS);
    return static_cast<size_t>(bytes);
  };
  const size_t default_before = used(default_pool);
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_before, &total), CUDA_SUCCESS);
  constexpr int kThreads = 4, kEach = 2000;
  constexpr size_t kFromDefault = 1000, kFromMade = 3000;  // 1 KiB and 3 KiB with the granule
  std::vector<std::vector<CUdeviceptr>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, &kept = held[static_cast<size_t>(t)]] {
      ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
      for (int i = 0; i < kEach; ++i) {
        CUdeviceptr pointer = 0;
        ASSERT_EQ(cuMemAllocAsync(&pointer, kFromDefault, nullptr), CUDA_SUCCESS);
        kept.push_back(pointer);
        ASSERT_EQ(cuMemAllocFromPoolAsync(&pointer, kFromMade, made, nullptr), CUDA_SUCCESS);
        kept.push_back(pointer);
      }
    });
  for (auto &thread : threads) thread.join();
  threads.clear();
  EXPECT_EQ(used(default_pool), default_before + size_t{kThreads} * kEach * 1024);
  EXPECT_EQ(used(made), size_t{kThreads} * kEach * 3072);
  EXPECT_EQ(used(made, CU_MEMPOOL_ATTR_USED_MEM_HIGH), size_t{kThreads} * kEach * 3072);
  size_t free_now = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before - size_t{kThreads} * kEach * (1024 + 3072));
  // Each thread frees the next one's, then the first of them again: not the driver's any more.
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([this, &kept = held[static_cast<size_t>(t + 1) % kThreads]] {
      ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
      for (CUdeviceptr pointer : kept) ASSERT_EQ(cuMemFreeAsync(pointer, nullptr), CUDA_SUCCESS);
      EXPECT_EQ(cuMemFreeAsync(kept.front(), nullptr), CUDA_ERROR_INVALID_VALUE);
    });
  for (auto &thread : threads) thread.join();
  EXPECT_EQ(used(default_pool), default_before);
  EXPECT_EQ(used(made), 0u);
  EXPECT_EQ(used(made, CU_MEMPOOL_ATTR_USED_MEM_HIGH), size_t{kThreads} * kEach * 3072);
  ASSERT_EQ(cuMemGetInfo_v2(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before);
  EXPECT_EQ(cuMemPoolDestroy(made), CUDA_SUCCESS);
}

// A context's destroy frees what every thread allocated in it, whichever shard holds it.
TEST_F(Sim, AContextsDestroyFreesWhatEveryThreadAllocatedInIt) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_before, &total), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&context, 0, 0), CUDA_SUCCESS);
  constexpr int kThreads = 4;
  std::vector<std::vector<CUdeviceptr>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([context, &kept = made[static_cast<size_t>(t)]] {
      ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
      for (int i = 0; i < 10; ++i) {
        CUdeviceptr pointer = 0;
        ASSERT_EQ(cuMemAlloc_v2(&pointer, 64 + static_cast<size_t>(i) * 100000), CUDA_SUCCESS);
        kept.push_back(pointer);
      }
    });
  for (auto &thread : threads) thread.join();
  ASSERT_EQ(cuCtxDestroy_v2(context), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  for (const auto &kept : made) {
    ASSERT_EQ(kept.size(), 10u);
    for (CUdeviceptr pointer : kept) EXPECT_EQ(cuMemFree_v2(pointer), CUDA_ERROR_INVALID_VALUE);
  }
  size_t free_now = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before);
}

TEST_F(Sim, CallsAreCountedOnEveryThreadWhetherItIsRunningOrHasExited) {
  const uint64_t before = leaseguard_sim_call_count("cuCtxGetCurrent");
  auto query = [](int times) {
    for (int i = 0; i < times; ++i) {
      CUcontext context = nullptr;
      cuCtxGetCurrent(&context);
    }
  };
  // Threads in waves, so later threads take over the counters of exited ones.
  for (int wave = 0; wave < 3; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(query, 250);
    for (auto &thread : threads) thread.join();
  }
  EXPECT_EQ(leaseguard_sim_call_count("cuCtxGetCurrent"), before + 3000);
  query(7);
  EXPECT_EQ(leaseguard_sim_call_count("cuCtxGetCurrent"), before + 3007);
  EXPECT_EQ(leaseguard_sim_call_count("cuNoSuchEntryPoint"), 0u);
}

TEST_F(Sim, TheCurrentContextIsTheTopOfTheThreadsStack) {
  CUcontext created = nullptr;
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&created, 0, 0), CUDA_SUCCESS);  // pushed
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary_);
  ASSERT_EQ(cuCtxPushCurrent_v2(created), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);  // replaces the top
  ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, primary_);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary_);  // the stack below was [primary]
  ASSERT_EQ(cuCtxPushCurrent_v2(created), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy_v2(created), CUDA_SUCCESS);  // pops itself
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary_);
  std::thread([] {
    CUcontext elsewhere = reinterpret_cast<CUcontext>(1);
    ASSERT_EQ(cuCtxGetCurrent(&elsewhere), CUDA_SUCCESS);
    EXPECT_EQ(elsewhere, nullptr);  // a new thread has no current context
  }).join();
}

TEST_F(Sim, ErrorNamesAndProcAddressOfUnknownSymbols) {
  const char *name = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_OUT_OF_MEMORY");
  void *function = reinterpret_cast<void *>(1);
  CUdriverProcAddressQueryResult status;
  EXPECT_EQ(cuGetProcAddress_v2("cuSomethingNew", &function, 13000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAllocAsync", &function, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &function, 13000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(function, reinterpret_cast<void *>(&cuMemAlloc_v2));
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &function, 2000, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(function, reinterpret_cast<void *>(&cuMemAlloc));
}

// The kernels the README's C++ example loads are ones the simulator has: its snippet runs on
// the simulator as written (docs/simulator.md lists the kernels).
TEST_F(Sim, TheReadmesKernelsAreTheSimulators) {
  std::ifstream readme(LEASEGUARD_README);
  ASSERT_TRUE(readme) << LEASEGUARD_README;
  std::stringstream text;
  text << readme.rdbuf();
  const std::string content = text.str();
  const std::regex load(R"re(load_function\(module, "([A-Za-z_0-9]+)"\))re");
  int kernels = 0;
  for (auto it = std::sregex_iterator(content.begin(), content.end(), load); it != std::sregex_iterator(); ++it) {
    const std::string image = "leaseguard-sim-module:" + (*it)[1].str();
    CUmodule module = nullptr;
    ASSERT_EQ(cuModuleLoadData(&module, image.c_str()), CUDA_SUCCESS) << image;
    CUfunction function = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&function, module, (*it)[1].str().c_str()), CUDA_SUCCESS) << (*it)[1].str();
    EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
    ++kernels;
  }
  EXPECT_GE(kernels, 1) << "the README loads no kernel any more: this test has nothing to check";
}

}  // namespace

int main(int argc, char **argv) {
  setenv("LEASEGUARD_SIM_CAPACITY", "1G", 1);
  setenv("LEASEGUARD_SIM_FAULTS", "cuMemsetD32_v2_ptds:2=999", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
