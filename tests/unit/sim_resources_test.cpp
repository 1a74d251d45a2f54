// The simulated driver's VMM, pools, arrays, IPC, host registration and external memory:
// the lifetime rules leaseguard's tracking depends on, as the driver has them.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"

extern "C" void leaseguard_sim_forked_children_inherit(int inherit);  // the simulator's, for tests

namespace {

constexpr size_t kGranularity = size_t{2} << 20;

class SimResources : public ::testing::Test {
 protected:
  // One reference to device 0's primary context per test, given back (see sim_test.cpp).
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
  bool primary_retained_ = false;
  static size_t used() {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
    return total - free_bytes;
  }
  static CUmemAllocationProp device_prop(unsigned handle_types = CU_MEM_HANDLE_TYPE_NONE) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
    return prop;
  }
  static void make_accessible(CUdeviceptr at, size_t size) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_EQ(cuMemSetAccess(at, size, &access, 1), CUDA_SUCCESS);
  }
  CUcontext primary_ = nullptr;
};

TEST_F(SimResources, VmmPhysicalMemoryGoesBackAfterReleaseAndTheLastUnmap) {
  const size_t before = used();
  CUmemAllocationProp prop = device_prop();
  size_t granularity = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranularity);
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(cuMemCreate(&handle, kGranularity + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not granular
  ASSERT_EQ(cuMemCreate(&handle, 2 * kGranularity, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(used(), before + 2 * kGranularity);
  CUdeviceptr range = 0;
  ASSERT_EQ(cuMemAddressReserve(&range, 4 * kGranularity, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(range % kGranularity, 0u);
  // Two mappings of one handle see the same bytes.
  ASSERT_EQ(cuMemMap(range, 2 * kGranularity, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(range + 2 * kGranularity, kGranularity, kGranularity, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(range, kGranularity, 0, handle, 0), CUDA_ERROR_ALREADY_MAPPED);
  EXPECT_EQ(cuMemsetD8_v2(range, 1, 16), CUDA_ERROR_INVALID_VALUE);  // not accessible yet
  make_accessible(range, 3 * kGranularity);
  ASSERT_EQ(cuMemsetD32_v2(range + kGranularity, 0xabcdef01u, 4), CUDA_SUCCESS);
  unsigned seen[4] = {};
  ASSERT_EQ(cuMemcpyDtoH_v2(seen, range + 2 * kGranularity, sizeof seen), CUDA_SUCCESS);
  EXPECT_EQ(seen[3], 0xabcdef01u);
  // Released while mapped: the memory stays until the last unmap.
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);  // no reference left
  EXPECT_EQ(used(), before + 2 * kGranularity);
  EXPECT_EQ(cuMemAddressFree(range, 4 * kGranularity), CUDA_ERROR_INVALID_VALUE);  // still mapped
  EXPECT_EQ(cuMemUnmap(range, kGranularity), CUDA_ERROR_INVALID_VALUE);            // part of a mapping
  ASSERT_EQ(cuMemUnmap(range, 2 * kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(used(), before + 2 * kGranularity);
  ASSERT_EQ(cuMemUnmap(range + 2 * kGranularity, kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(used(), before);
  EXPECT_EQ(cuMemAddressFree(range, 2 * kGranularity), CUDA_ERROR_INVALID_VALUE);  // not its size
  EXPECT_EQ(cuMemAddressFree(range, 4 * kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(range, 4 * kGranularity), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(SimResources, RetainExportAndImportAreReferencesOfTheirOwn) {
  CUmemAllocationProp prop = device_prop(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle handle = 0, retained = 0, imported = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr range = 0;
  ASSERT_EQ(cuMemAddressReserve(&range, kGranularity, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(range, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void *>(range + 100)), CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(retained), CUDA_SUCCESS);  // the retain's own reference
  int fd = -1;
  EXPECT_EQ(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);  // released: no handle any more
  ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void *>(range)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemExportToShareableHandle(&fd, retained, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void *>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_SUCCESS);
  close(fd);
  EXPECT_NE(imported, 0u);
  EXPECT_EQ(cuMemRelease(imported), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(retained), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(range, kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(range, kGranularity), CUDA_SUCCESS);
}

TEST_F(SimResources, HostLocatedVmmMemoryTakesNoDeviceCapacity) {
  const size_t before = used();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 12345;  // a NUMA node, not a device
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(used(), before);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
}

TEST_F(SimResources, ADestroyedPoolKeepsItsOutstandingAllocationsUntilFreed) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr, default_pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 1000, pool, nullptr), CUDA_SUCCESS);
  cuuint64_t in_use = 0;
  ASSERT_EQ(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &in_use), CUDA_SUCCESS);
  EXPECT_EQ(in_use, 1024u);  // rounded to the allocation granule
  EXPECT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocFromPoolAsync(&b, 1000, pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8_v2(a, 7, 1000), CUDA_SUCCESS);  // still valid
  EXPECT_EQ(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
  CUmemLocation location{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  ASSERT_EQ(cuMemGetDefaultMemPool(&default_pool, &location, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  CUmemoryPool same = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&same, 0), CUDA_SUCCESS);
  EXPECT_EQ(default_pool, same);
  EXPECT_EQ(cuMemPoolDestroy(default_pool), CUDA_ERROR_INVALID_VALUE);  // never destroyable
}

TEST_F(SimResources, ArraysTakeTheBytesTheirDescriptorSays) {
  const size_t before = used();
  CUDA_ARRAY_DESCRIPTOR flat{};
  flat.Width = 100;
  flat.Height = 10;
  flat.Format = CU_AD_FORMAT_FLOAT;
  flat.NumChannels = 4;
  CUarray array = nullptr;
  ASSERT_EQ(cuArrayCreate_v2(&array, &flat), CUDA_SUCCESS);
  EXPECT_EQ(used(), before + 100 * 10 * 16);
  flat.NumChannels = 3;
  CUarray refused = nullptr;
  EXPECT_EQ(cuArrayCreate_v2(&refused, &flat), CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY3D_DESCRIPTOR volume{};
  volume.Width = 8;
  volume.Height = 8;
  volume.Depth = 8;
  volume.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  volume.NumChannels = 1;
  CUmipmappedArray mipmapped = nullptr;
  ASSERT_EQ(cuMipmappedArrayCreate(&mipmapped, &volume, 4), CUDA_SUCCESS);  // 512 + 64 + 8 + 1
  EXPECT_EQ(used(), before + 16000 + 585);
  EXPECT_EQ(cuArrayDestroy(reinterpret_cast<CUarray>(mipmapped)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMipmappedArrayDestroy(mipmapped), CUDA_SUCCESS);
  EXPECT_EQ(cuArrayDestroy(array), CUDA_SUCCESS);
  EXPECT_EQ(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(used(), before);
}

TEST_F(SimResources, IpcHandlesOpenInAnotherProcessOnlyAndCloseWithTheirOwnCall) {
  // The other process is a forked child that goes on with the device (the driver would refuse
  // it: SimFork below).
  leaseguard_sim_forked_children_inherit(1);
  struct Refused {
    ~Refused() { leaseguard_sim_forked_children_inherit(0); }
  } refused_again_after;
  CUdeviceptr exported = 0, opened = 0;
  ASSERT_EQ(cuMemAlloc_v2(&exported, 4096), CUDA_SUCCESS);
  CUipcMemHandle handle;
  ASSERT_EQ(cuIpcGetMemHandle(&handle, exported), CUDA_SUCCESS);
  EXPECT_EQ(cuIpcOpenMemHandle_v2(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT);
  pid_t child = fork();
  if (child == 0) {
    CUdeviceptr mine = 0;
    int failures = 0;
    failures += cuIpcOpenMemHandle_v2(&mine, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS;
    failures += cuMemsetD8_v2(mine, 1, 4096) != CUDA_SUCCESS;
    failures += cuMemFree_v2(mine) != CUDA_ERROR_INVALID_VALUE;  // not how a mapping is closed
    failures += cuIpcCloseMemHandle(mine) != CUDA_SUCCESS;
    failures += cuIpcCloseMemHandle(mine) != CUDA_ERROR_INVALID_VALUE;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(cuMemFree_v2(exported), CUDA_SUCCESS);
}

// As the driver: a child forked after cuInit cannot use the device at all, cuInit included,
// and the parent goes on unharmed.
TEST_F(SimResources, AChildForkedAfterInitIsRefusedAsTheDriverRefusesIt) {
  CUdeviceptr held = 0;
  ASSERT_EQ(cuMemAlloc_v2(&held, 4096), CUDA_SUCCESS);
  pid_t child = fork();
  if (child == 0) {
    int failures = 0;
    int count = 0;
    CUdeviceptr mine = 0;
    failures += cuInit(0) != CUDA_ERROR_NOT_INITIALIZED;
    failures += cuDeviceGetCount(&count) != CUDA_ERROR_NOT_INITIALIZED;
    failures += cuMemAlloc_v2(&mine, 4096) != CUDA_ERROR_NOT_INITIALIZED;
    failures += cuMemFree_v2(held) != CUDA_ERROR_NOT_INITIALIZED;  // the parent's, not the child's
    failures += cuCtxSetCurrent(primary_) != CUDA_ERROR_NOT_INITIALIZED;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  CUdeviceptr more = 0;
  EXPECT_EQ(cuMemAlloc_v2(&more, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(more), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(held), CUDA_SUCCESS);
}

TEST_F(SimResources, HostRegistrationsDoNotOverlapAndUnregisterOnce) {
  std::vector<char> buffer(8192);
  ASSERT_EQ(cuMemHostRegister_v2(buffer.data(), 4096, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister_v2(buffer.data() + 100, 100, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cuMemHostRegister_v2(buffer.data() + 4096, 4096, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(buffer.data() + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(buffer.data()), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(buffer.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(buffer.data() + 4096), CUDA_SUCCESS);
}

TEST_F(SimResources, ExternalBuffersOutliveTheirObjectAndShareItsBytes) {
  int fd = memfd_create("external", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = 1 << 16;
  CUexternalMemory memory = nullptr;
  ASSERT_EQ(cuImportExternalMemory(&memory, &desc), CUDA_SUCCESS);  // the driver owns fd now
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer_desc{};
  buffer_desc.offset = 4096;
  buffer_desc.size = 8192;
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(cuExternalMemoryGetMappedBuffer(&first, memory, &buffer_desc), CUDA_SUCCESS);
  ASSERT_EQ(cuExternalMemoryGetMappedBuffer(&second, memory, &buffer_desc), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(first, 0x42, 8192), CUDA_SUCCESS);
  unsigned char byte = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&byte, second + 8191, 1), CUDA_SUCCESS);
  EXPECT_EQ(byte, 0x42);
  buffer_desc.offset = 1 << 16;
  CUdeviceptr outside = 0;
  EXPECT_EQ(cuExternalMemoryGetMappedBuffer(&outside, memory, &buffer_desc), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDestroyExternalMemory(memory), CUDA_SUCCESS);
  EXPECT_EQ(cuDestroyExternalMemory(memory), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemsetD8_v2(first, 1, 8192), CUDA_SUCCESS);  // buffers stay until cuMemFree
  EXPECT_EQ(cuMemFree_v2(first), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(second), CUDA_SUCCESS);
}

TEST_F(SimResources, ContextDestroyTakesArraysRegistrationsAndBuffersButNotVmmOrExternalObjects) {
  CUcontext context = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&context, 0, 0), CUDA_SUCCESS);
  const size_t before = used();
  CUDA_ARRAY_DESCRIPTOR flat{};
  flat.Width = 256;
  flat.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  flat.NumChannels = 1;
  CUarray array = nullptr;
  ASSERT_EQ(cuArrayCreate_v2(&array, &flat), CUDA_SUCCESS);
  std::vector<char> host(4096);
  ASSERT_EQ(cuMemHostRegister_v2(host.data(), host.size(), 0), CUDA_SUCCESS);
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy_v2(context), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  EXPECT_EQ(used(), before + kGranularity);  // the array is gone, the VMM memory is not
  EXPECT_EQ(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemHostUnregister(host.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(used(), before);
}

}  // namespace
