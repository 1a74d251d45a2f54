// What the simulated driver gives the CUDA runtime beyond allocation: the private export
// tables, the keyed hash behind INTEGRITY_CHECK, context settings, streams and events. The
// runtime itself running on them is tested end to end in tests/integration/runtime_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "lg_cuda.h"
#include "sim_context_fixture.h"
#include "sim_integrity.h"

namespace {

class RuntimeSupport : public leaseguard::testing::PrimaryContextTest {};

CUuuid id_of(std::initializer_list<unsigned> bytes) {
  CUuuid id{};
  size_t i = 0;
  for (unsigned byte : bytes) id.bytes[i++] = static_cast<char>(byte);
  return id;
}

const CUuuid kCudartInterface =
    id_of({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9});
const CUuuid kContextLocalStorage =
    id_of({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93});
const CUuuid kIntegrityCheck =
    id_of({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2});

const void *const *table(const CUuuid &id) {
  const void *found = nullptr;
  if (cuGetExportTable(&found, &id) != CUDA_SUCCESS) return nullptr;
  return static_cast<const void *const *>(found);
}

std::string hex(const leaseguard::sim::Md2Digest &digest) {
  std::string text;
  char byte[3];
  for (uint8_t value : digest) {
    std::snprintf(byte, sizeof byte, "%02x", value);
    text += byte;
  }
  return text;
}

leaseguard::sim::Md2Digest md2_of(const char *text) {
  return leaseguard::sim::md2(reinterpret_cast<const uint8_t *>(text), std::strlen(text));
}

}  // namespace

TEST(Md2, MatchesTheTestSuiteOfRfc1319) {
  EXPECT_EQ(hex(md2_of("")), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(hex(md2_of("a")), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(hex(md2_of("abc")), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(hex(md2_of("message digest")), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(hex(md2_of("abcdefghijklmnopqrstuvwxyz")), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(hex(md2_of("12345678901234567890123456789012345678901234567890123456789012345678901234567890")),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

TEST(Md2, HmacIsTheTwoPassConstructionOfRfc2104) {
  std::array<uint8_t, 16> key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 13 + 1);
  const char *message = "leaseguard";
  std::vector<uint8_t> inner;
  for (uint8_t byte : key) inner.push_back(byte ^ 0x36);
  inner.insert(inner.end(), message, message + std::strlen(message));
  const auto inner_digest = leaseguard::sim::md2(inner.data(), inner.size());
  std::vector<uint8_t> outer;
  for (uint8_t byte : key) outer.push_back(byte ^ 0x5c);
  outer.insert(outer.end(), inner_digest.begin(), inner_digest.end());
  EXPECT_EQ(leaseguard::sim::hmac_md2(key, reinterpret_cast<const uint8_t *>(message), std::strlen(message)),
            leaseguard::sim::md2(outer.data(), outer.size()));
}

TEST_F(RuntimeSupport, AnUnknownExportTableIsRefusedAsTheDriverRefusesIt) {
  const CUuuid unknown = id_of({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  const void *found = reinterpret_cast<const void *>(0x1);
  EXPECT_EQ(cuGetExportTable(&found, &unknown), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(found, nullptr);
  EXPECT_EQ(cuGetExportTable(nullptr, &unknown), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetExportTable(&found, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(RuntimeSupport, ATableGivesItsSizeAndEverySlotAnswers) {
  const void *const *cudart = table(kCudartInterface);
  ASSERT_NE(cudart, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cudart[0]), 13 * sizeof(void *));
  // Slot 2 retains the device's primary context and gives it.
  auto retain = reinterpret_cast<CUresult (*)(CUcontext *, CUdevice)>(const_cast<void *>(cudart[2]));
  CUcontext context = nullptr;
  ASSERT_EQ(retain(&context, 0), CUDA_SUCCESS);
  EXPECT_EQ(context, primary_);
  EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(retain(&context, 7), CUDA_ERROR_INVALID_DEVICE);
  // A slot with no implementation refuses instead of jumping to address zero.
  for (size_t slot = 1; slot < 13; ++slot) ASSERT_NE(cudart[slot], nullptr) << slot;
  auto unimplemented = reinterpret_cast<CUresult (*)()>(const_cast<void *>(cudart[5]));
  EXPECT_EQ(unimplemented(), CUDA_ERROR_NOT_SUPPORTED);
}

namespace {
struct Destroyed {
  CUcontext context = nullptr;
  void *key = nullptr;
  void *value = nullptr;
  int calls = 0;
};
Destroyed g_destroyed;
void on_destroy(CUcontext context, void *key, void *value) {
  g_destroyed.context = context;
  g_destroyed.key = key;
  g_destroyed.value = value;
  ++g_destroyed.calls;
}
}  // namespace

TEST_F(RuntimeSupport, ContextStorageEndsWithItsContextAndTellsItsOwner) {
  const void *const *storage = table(kContextLocalStorage);
  ASSERT_NE(storage, nullptr);
  using Put = CUresult (*)(CUcontext, void *, void *, void (*)(CUcontext, void *, void *));
  using Delete = CUresult (*)(CUcontext, void *);
  using Get = CUresult (*)(void **, CUcontext, void *);
  auto put = reinterpret_cast<Put>(const_cast<void *>(storage[0]));
  auto erase = reinterpret_cast<Delete>(const_cast<void *>(storage[1]));
  auto get = reinterpret_cast<Get>(const_cast<void *>(storage[2]));
  int key = 0, value = 0, other = 0;
  void *read = nullptr;
  EXPECT_EQ(get(&read, nullptr, &key), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(put(nullptr, &key, &value, on_destroy), CUDA_SUCCESS);  // null: the current context
  ASSERT_EQ(get(&read, primary_, &key), CUDA_SUCCESS);
  EXPECT_EQ(read, &value);
  ASSERT_EQ(put(primary_, &other, &other, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(erase(primary_, &other), CUDA_SUCCESS);
  EXPECT_EQ(erase(primary_, &other), CUDA_ERROR_INVALID_HANDLE);

  g_destroyed = {};
  ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(g_destroyed.calls, 1);
  EXPECT_EQ(g_destroyed.context, primary_);
  EXPECT_EQ(g_destroyed.key, &key);
  EXPECT_EQ(g_destroyed.value, &value);
  EXPECT_EQ(get(&read, primary_, &key), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(RuntimeSupport, TheIntegrityAnswerIsFixedForVersionsEndingInZeroOrOneAndKeyedOtherwise) {
  const void *const *integrity = table(kIntegrityCheck);
  ASSERT_NE(integrity, nullptr);
  auto check = reinterpret_cast<CUresult (*)(uint32_t, uint64_t, uint64_t *)>(const_cast<void *>(integrity[1]));
  uint64_t words[2] = {};
  ASSERT_EQ(check(13000, 1796000000, words), CUDA_SUCCESS);
  EXPECT_EQ(words[0], 0x3341181c03cb675cULL);
  EXPECT_EQ(words[1], 0x8ed383aa1f4cd1e8ULL);
  ASSERT_EQ(check(13001, 1796000000, words), CUDA_SUCCESS);
  EXPECT_EQ(words[0], 0x1841181c03cb675cULL);
  // Keyed: the answer depends on the time the caller passed (and the process and thread).
  uint64_t first[2] = {}, second[2] = {};
  ASSERT_EQ(check(13002, 1796000000, first), CUDA_SUCCESS);
  ASSERT_EQ(check(13002, 1796000001, second), CUDA_SUCCESS);
  EXPECT_NE(std::memcmp(first, second, sizeof first), 0);
  EXPECT_EQ(check(13002, 1796000000, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(RuntimeSupport, DeviceIdentityAndContextSettingsReadBackWhatWasSet) {
  CUuuid uuid{};
  ASSERT_EQ(cuDeviceGetUuid_v2(&uuid, 0), CUDA_SUCCESS);
  EXPECT_EQ(std::string(uuid.bytes, 10), "lg-sim-gpu");
  char bus_id[32];
  ASSERT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 0), CUDA_SUCCESS);
  int bus = 0;
  ASSERT_EQ(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0), CUDA_SUCCESS);
  char expected[32];
  std::snprintf(expected, sizeof expected, "0000:%02x:00.0", bus);
  EXPECT_STREQ(bus_id, expected);
  CUdevice device = -1;
  ASSERT_EQ(cuDeviceGetByPCIBusId(&device, bus_id), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cuDeviceGetByPCIBusId(&device, "0000:99:00.0"), CUDA_ERROR_INVALID_DEVICE);

  size_t heap = 0;
  ASSERT_EQ(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(heap, 8u << 20);
  ASSERT_EQ(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64u << 20), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(heap, 64u << 20);
  EXPECT_EQ(cuCtxSetLimit(static_cast<CUlimit>(77), 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20), CUDA_SUCCESS);

  int least = 1, greatest = 1;
  ASSERT_EQ(cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);
  CUmoduleLoadingMode mode{};
  ASSERT_EQ(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_MODULE_LAZY_LOADING);
}

TEST_F(RuntimeSupport, StreamOrderedCopiesAndMemsetsMoveTheDataAndCheckTheirRanges) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreateWithPriority(&stream, 1, -9), CUDA_SUCCESS);
  int priority = 0;
  ASSERT_EQ(cuStreamGetPriority(stream, &priority), CUDA_SUCCESS);
  EXPECT_EQ(priority, -5);  // clamped into the range
  CUdeviceptr device = 0;
  ASSERT_EQ(cuMemAlloc_v2(&device, 256), CUDA_SUCCESS);
  std::vector<unsigned char> host(256, 7), back(256, 0);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(device, host.data(), 256, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(device, 0x01020304, 2, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back.data()), device, 256, stream), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 0x04);
  EXPECT_EQ(back[7], 0x01);
  EXPECT_EQ(back[8], 7);
  EXPECT_EQ(cuMemcpyHtoDAsync_v2(device + 200, host.data(), 100, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpy(device + 250, reinterpret_cast<CUdeviceptr>(host.data()), 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree_v2(device), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
}

TEST_F(RuntimeSupport, EventsCompleteWhenRecordedAndTimeTheSpanBetween) {
  CUevent start = nullptr, stop = nullptr, untimed = nullptr;
  ASSERT_EQ(cuEventCreate(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&stop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&untimed, 0x2), CUDA_SUCCESS);  // CU_EVENT_DISABLE_TIMING
  float milliseconds = -1;
  EXPECT_EQ(cuEventElapsedTime(&milliseconds, start, stop), CUDA_ERROR_INVALID_HANDLE);  // not recorded
  ASSERT_EQ(cuEventRecord(start, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(stop, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(untimed, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(stop), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime(&milliseconds, start, stop), CUDA_SUCCESS);
  EXPECT_GE(milliseconds, 0.0f);
  EXPECT_EQ(cuEventElapsedTime(&milliseconds, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  for (CUevent event : {start, stop, untimed}) EXPECT_EQ(cuEventDestroy_v2(event), CUDA_SUCCESS);
}

TEST_F(RuntimeSupport, TwoDimensionalCopiesMoveRowsAndPointersDescribeTheirMemory) {
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch_v2(&pitched, &pitch, 40, 3, 4), CUDA_SUCCESS);
  std::vector<unsigned char> rows(40 * 3), back(40 * 3, 0);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<unsigned char>(i);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = rows.data();
  up.srcPitch = 40;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = pitched;
  up.dstPitch = pitch;
  up.WidthInBytes = 40;
  up.Height = 3;
  ASSERT_EQ(cuMemcpy2D_v2(&up), CUDA_SUCCESS);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = pitched;
  down.srcPitch = pitch;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = 40;
  down.WidthInBytes = 40;
  down.Height = 3;
  ASSERT_EQ(cuMemcpy2D_v2(&down), CUDA_SUCCESS);
  EXPECT_EQ(back, rows);
  down.Height = 400;  // past the allocation's last row
  EXPECT_EQ(cuMemcpy2D_v2(&down), CUDA_ERROR_INVALID_VALUE);

  unsigned type = 0;
  ASSERT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pitched + 5), CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  CUdeviceptr start = 0;
  ASSERT_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pitched + 5), CUDA_SUCCESS);
  EXPECT_EQ(start, pitched);
  CUcontext owner = nullptr;
  ASSERT_EQ(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, pitched), CUDA_SUCCESS);
  EXPECT_EQ(owner, primary_);
  int on_stack = 0;
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(&on_stack)),
            CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute asked[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
  type = 7;
  owner = primary_;
  void *answers[] = {&type, &owner};
  ASSERT_EQ(cuPointerGetAttributes(2, asked, answers, reinterpret_cast<CUdeviceptr>(&on_stack)), CUDA_SUCCESS);
  EXPECT_EQ(type, 0u);  // memory the driver never saw
  EXPECT_EQ(owner, nullptr);
  ASSERT_EQ(cuMemFree_v2(pitched), CUDA_SUCCESS);
}
