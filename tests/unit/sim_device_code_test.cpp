// Device code on the simulator: what it reads out of cubins, PTX and fat binaries
// (sim/sim_device_code.h), and libraries and modules loaded from it answering for their
// kernels and variables as a driver does (sim/sim_libraries.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#define LG_CUDA_DEFINES_ENTRY_POINTS 1
#include "device_code_images.h"
#include "lg_cuda.h"
#include "sim_context_fixture.h"
#include "sim_device_code.h"

using leaseguard::sim::DeviceCode;
using leaseguard::sim::DeviceCodeStatus;
using leaseguard::sim::kFatbinEntryElf;
using leaseguard::sim::kFatbinEntryPtx;
using leaseguard::sim::read_device_code;
using namespace leaseguard::testing;

namespace {

const std::vector<unsigned char> kAnswer = {42, 0, 0, 0};

std::vector<unsigned char> sample_cubin(const std::string &kernel) {
  return make_cubin({kernel, "_Z5scalePfi"},
                    {{"answer", 4, kAnswer}, {"buffer", 64, {}}, {"shared_total", 4, {9, 0, 0, 0}, true}});
}

DeviceCode read_ok(const std::vector<unsigned char> &image) {
  DeviceCode code;
  EXPECT_EQ(read_device_code(image.data(), image.size(), code), DeviceCodeStatus::Read);
  // The driver API gives no size: the same image read from its headers alone.
  DeviceCode unsized;
  EXPECT_EQ(read_device_code(image.data(), unsized), DeviceCodeStatus::Read);
  EXPECT_EQ(unsized.kernels, code.kernels);
  EXPECT_EQ(unsized.variables.size(), code.variables.size());
  return code;
}

}  // namespace

TEST(DeviceCode, ACubinGivesItsKernelsAndItsVariablesWithTheirInitialBytes) {
  const DeviceCode code = read_ok(sample_cubin("_Z10vector_addPKfS0_Pfj"));
  EXPECT_EQ(code.kernels, (std::set<std::string>{"_Z10vector_addPKfS0_Pfj", "_Z5scalePfi"}));  // not "helper"
  ASSERT_EQ(code.variables.count("answer"), 1u);
  EXPECT_EQ(code.variables.at("answer").size, 4u);
  EXPECT_EQ(code.variables.at("answer").initial, kAnswer);
  ASSERT_EQ(code.variables.count("buffer"), 1u);
  EXPECT_EQ(code.variables.at("buffer").size, 64u);
  EXPECT_TRUE(code.variables.at("buffer").initial.empty());
  EXPECT_FALSE(code.variables.at("answer").managed);
  EXPECT_TRUE(code.variables.at("shared_total").managed);
}

TEST(DeviceCode, PtxGivesItsEntriesAndItsModuleScopeVariables) {
  const std::string ptx = R"(//
.version 8.8
.target sm_90
.address_size 64
.extern .global .align 4 .u32 elsewhere;   // declared, defined in another module
.visible .global .align 4 .u32 counter = 7;
.global .align 8 .b8 table[16] = {1, 2, 3};
.const .align 4 .f32 scale = 0f3F800000;   /* 1.0f */
.global .align 1 .b8 message[] = {104, 105, 0};
.global .align 4 .u32 grid[2][3];
.visible .global .attribute(.managed) .align 4 .u32 unified = 5;
.visible .entry _Z4fillPji(
  .param .u64 _Z4fillPji_param_0,
  .param .u32 _Z4fillPji_param_1
)
{
  .reg .b32 %r<3>;
  .shared .align 4 .b8 staging[64];
  ret;
}
.weak .entry helper_kernel()
{
  ret;
}
.global .align 4 .u32 after_the_kernels = 3;
)";
  const DeviceCode code = read_ok(bytes_of(ptx));
  EXPECT_EQ(code.kernels, (std::set<std::string>{"_Z4fillPji", "helper_kernel"}));
  EXPECT_EQ(code.variables.count("elsewhere"), 0u);
  EXPECT_EQ(code.variables.count("staging"), 0u);
  ASSERT_EQ(code.variables.count("counter"), 1u);
  EXPECT_EQ(code.variables.at("counter").size, 4u);
  EXPECT_EQ(code.variables.at("counter").initial, (std::vector<unsigned char>{7, 0, 0, 0}));
  EXPECT_EQ(code.variables.at("table").size, 16u);
  EXPECT_EQ(code.variables.at("table").initial, (std::vector<unsigned char>{1, 2, 3}));
  EXPECT_EQ(code.variables.at("scale").initial, (std::vector<unsigned char>{0x00, 0x00, 0x80, 0x3f}));
  EXPECT_EQ(code.variables.at("message").size, 3u);
  EXPECT_EQ(code.variables.at("grid").size, 24u);
  EXPECT_TRUE(code.variables.at("unified").managed);
  EXPECT_EQ(code.variables.at("unified").initial, (std::vector<unsigned char>{5, 0, 0, 0}));
  EXPECT_FALSE(code.variables.at("counter").managed);
  EXPECT_EQ(code.variables.at("after_the_kernels").initial, (std::vector<unsigned char>{3, 0, 0, 0}));
}

TEST(DeviceCode, AFatBinaryIsReadAtTheHighestArchitectureTheDeviceRuns) {
  const auto fatbin =
      make_fatbin({{kFatbinEntryElf, 75, sample_cubin("sm75_kernel")},
                   {kFatbinEntryElf, 90, sample_cubin("sm90_kernel"), Compression::Zstd},
                   {kFatbinEntryElf, 100, sample_cubin("sm100_kernel"), Compression::Lz4},
                   {kFatbinEntryPtx, 90, bytes_of(".version 8.8\n.target sm_90\n.entry ptx_kernel()\n{\n}\n")}});
  const DeviceCode code = read_ok(fatbin);
  EXPECT_EQ(code.kernels.count("sm90_kernel"), 1u);
  EXPECT_EQ(code.kernels.count("sm75_kernel"), 0u);
  EXPECT_EQ(code.kernels.count("sm100_kernel"), 0u);
  EXPECT_EQ(code.kernels.count("ptx_kernel"), 0u);
  EXPECT_EQ(code.variables.at("answer").initial, kAnswer);

  // Behind the wrapper nvcc embeds, the same.
  const FatbinWrapper wrapper{leaseguard::sim::kFatbinWrapperMagic, 1, fatbin.data()};
  DeviceCode wrapped;
  ASSERT_EQ(read_device_code(&wrapper, wrapped), DeviceCodeStatus::Read);
  EXPECT_EQ(wrapped.kernels, code.kernels);
}

TEST(DeviceCode, Lz4AndZstdEntriesReadAsTheStoredOne) {
  for (Compression compression : {Compression::None, Compression::Lz4, Compression::Zstd}) {
    const DeviceCode code = read_ok(make_fatbin({{kFatbinEntryElf, 90, sample_cubin("k"), compression}}));
    EXPECT_EQ(code.kernels.count("k"), 1u);
    EXPECT_EQ(code.variables.at("answer").initial, kAnswer);
  }
}

TEST(DeviceCode, PtxIsReadWhenNoCubinFitsAndNothingFittingIsNoBinaryForTheGpu) {
  const DeviceCode code = read_ok(
      make_fatbin({{kFatbinEntryElf, 100, sample_cubin("sm100_kernel")},
                   {kFatbinEntryPtx, 80, bytes_of(".version 8.0\n.target sm_80\n.visible .entry jit_me()\n{\n}\n"),
                    Compression::Lz4}}));
  EXPECT_EQ(code.kernels, (std::set<std::string>{"jit_me"}));

  const auto too_new = make_fatbin(
      {{kFatbinEntryElf, 100, sample_cubin("k")}, {kFatbinEntryPtx, 120, bytes_of(".version 9.0\n.target sm_120\n")}});
  DeviceCode none;
  EXPECT_EQ(read_device_code(too_new.data(), too_new.size(), none), DeviceCodeStatus::NoBinaryForGpu);
}

TEST(DeviceCode, CorruptCodeIsRefusedAndNothingOutsideItIsRead) {
  DeviceCode code;
  const auto fatbin = make_fatbin({{kFatbinEntryElf, 90, sample_cubin("k"), Compression::Zstd}});
  // Cut short: the header promises more than there is.
  EXPECT_EQ(read_device_code(fatbin.data(), fatbin.size() - 8, code), DeviceCodeStatus::Corrupt);
  // A compressed payload that does not decompress.
  auto damaged = fatbin;
  damaged[16 + 64 + 4] ^= 0xff;
  EXPECT_EQ(read_device_code(damaged.data(), damaged.size(), code), DeviceCodeStatus::Corrupt);
  // A cubin whose section headers lie past its end.
  auto cubin = sample_cubin("k");
  Elf64_Ehdr header;
  std::memcpy(&header, cubin.data(), sizeof header);
  header.e_shoff = cubin.size();
  std::memcpy(cubin.data(), &header, sizeof header);
  EXPECT_EQ(read_device_code(cubin.data(), cubin.size(), code), DeviceCodeStatus::Corrupt);
  // Neither format.
  const auto text = bytes_of("not device code");
  EXPECT_EQ(read_device_code(text.data(), text.size(), code), DeviceCodeStatus::NotCode);
}

// ---- libraries and modules loaded from device code ----

namespace {

class Libraries : public leaseguard::testing::PrimaryContextTest {
 protected:
  // vector_add(const float *, const float *, float *, unsigned) as nvcc names it, which the
  // simulator has a stand-in for, and scale(float *, int), which it has not.
  const std::vector<unsigned char> fatbin_ =
      make_fatbin({{kFatbinEntryElf, 90, sample_cubin("_Z10vector_addPKfS0_Pfj"), Compression::Zstd}});
};

size_t free_memory() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  return free;
}

}  // namespace

TEST_F(Libraries, OnlyTheKernelsTheCodeDeclaresAreFoundAndOnlyThoseWithAStandInRun) {
  const FatbinWrapper wrapper{leaseguard::sim::kFatbinWrapperMagic, 1, fatbin_.data()};
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, &wrapper, nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS);
  const char garbage[] = "not device code";
  CUlibrary refused = nullptr;
  EXPECT_EQ(cuLibraryLoadData(&refused, garbage, nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_ERROR_INVALID_IMAGE);

  CUkernel added = nullptr, scaled = nullptr, missing = nullptr;
  ASSERT_EQ(cuLibraryGetKernel(&added, library, "_Z10vector_addPKfS0_Pfj"), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetKernel(&scaled, library, "_Z5scalePfi"), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryGetKernel(&missing, library, "helper"), CUDA_ERROR_NOT_FOUND);  // a device function
  EXPECT_EQ(cuLibraryGetKernel(&missing, library, "_Z7unknownv"), CUDA_ERROR_NOT_FOUND);
  const char *name = nullptr;
  ASSERT_EQ(cuKernelGetName(&name, scaled), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z5scalePfi");
  CUlibrary owner = nullptr;
  ASSERT_EQ(cuKernelGetLibrary(&owner, scaled), CUDA_SUCCESS);
  EXPECT_EQ(owner, library);
  CUfunction add = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&add, added), CUDA_SUCCESS);

  const unsigned n = 64;
  CUdeviceptr a = 0, b = 0, c = 0;
  for (CUdeviceptr *buffer : {&a, &b, &c}) ASSERT_EQ(cuMemAlloc_v2(buffer, n * sizeof(float)), CUDA_SUCCESS);
  std::vector<float> ones(n, 1.0f), twos(n, 2.0f), sums(n, 0.0f);
  ASSERT_EQ(cuMemcpyHtoD_v2(a, ones.data(), n * sizeof(float)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD_v2(b, twos.data(), n * sizeof(float)), CUDA_SUCCESS);
  unsigned count = n;
  void *arguments[] = {&a, &b, &c, &count};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = n;
  config.blockDimY = config.blockDimZ = 1;
  ASSERT_EQ(cuLaunchKernelEx(&config, add, arguments, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH_v2(sums.data(), c, n * sizeof(float)), CUDA_SUCCESS);
  EXPECT_EQ(sums[0], 3.0f);
  EXPECT_EQ(sums[n - 1], 3.0f);

  int size = static_cast<int>(n);
  void *scale_arguments[] = {&c, &size};
  EXPECT_EQ(
      cuLaunchKernel(reinterpret_cast<CUfunction>(scaled), 1, 1, 1, n, 1, 1, 0, nullptr, scale_arguments, nullptr),
      CUDA_ERROR_NO_BINARY_FOR_GPU);
  int registers = 0;
  EXPECT_EQ(cuKernelGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, scaled, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuFuncSetCacheConfig(add, CU_FUNC_CACHE_PREFER_EQUAL), CUDA_SUCCESS);
  int blocks = 0;
  ASSERT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add, 256, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 8);  // 2048 threads a multiprocessor

  for (CUdeviceptr buffer : {a, b, c}) EXPECT_EQ(cuMemFree_v2(buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(library), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Libraries, AVariableIsDeviceMemoryOfItsSizeHoldingItsInitialValueUntilTheUnload) {
  const size_t before = free_memory();
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, fatbin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS);
  CUdeviceptr answer = 0;
  size_t bytes = 0;
  ASSERT_EQ(cuLibraryGetGlobal(&answer, &bytes, library, "answer"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  int value = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&value, answer, sizeof value), CUDA_SUCCESS);
  EXPECT_EQ(value, 42);
  // Written, read back through a second lookup: the same memory.
  const int changed = 7;
  ASSERT_EQ(cuMemcpyHtoD_v2(answer, &changed, sizeof changed), CUDA_SUCCESS);
  CUdeviceptr again = 0;
  ASSERT_EQ(cuLibraryGetGlobal(&again, nullptr, library, "answer"), CUDA_SUCCESS);
  EXPECT_EQ(again, answer);
  ASSERT_EQ(cuMemcpyDtoH_v2(&value, again, sizeof value), CUDA_SUCCESS);
  EXPECT_EQ(value, 7);
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuLibraryGetGlobal(&buffer, &bytes, library, "buffer"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 64u);
  EXPECT_EQ(cuLibraryGetGlobal(&buffer, &bytes, library, "absent"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuMemFree_v2(answer), CUDA_ERROR_INVALID_VALUE);  // not the program's to free
  EXPECT_LT(free_memory(), before);

  // A __managed__ variable: one copy, there with no context current, readable by the host.
  CUdeviceptr managed = 0;
  EXPECT_EQ(cuLibraryGetManaged(&managed, &bytes, library, "answer"), CUDA_ERROR_NOT_FOUND);  // not managed
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetManaged(&managed, &bytes, library, "shared_total"), CUDA_SUCCESS);
  EXPECT_EQ(*reinterpret_cast<const int *>(managed), 9);
  EXPECT_EQ(cuLibraryGetGlobal(&answer, &bytes, library, "answer"), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuCtxSetCurrent(primary_), CUDA_SUCCESS);
  CUdeviceptr same = 0;
  ASSERT_EQ(cuLibraryGetGlobal(&same, &bytes, library, "shared_total"), CUDA_SUCCESS);
  EXPECT_EQ(same, managed);

  EXPECT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before);
  EXPECT_EQ(cuLibraryGetGlobal(&answer, &bytes, library, "answer"), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Libraries, AModuleOfDeviceCodeAnswersForItsFunctionsAndVariables) {
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadDataEx(&module, fatbin_.data(), 0, nullptr, nullptr), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&function, module, "_Z10vector_addPKfS0_Pfj"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&function, module, "_Z7unknownv"), CUDA_ERROR_NOT_FOUND);
  CUdeviceptr answer = 0;
  size_t bytes = 0;
  ASSERT_EQ(cuModuleGetGlobal_v2(&answer, &bytes, module, "answer"), CUDA_SUCCESS);
  int value = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&value, answer, sizeof value), CUDA_SUCCESS);
  EXPECT_EQ(value, 42);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);

  // A module that is no code at all, and JIT linking, which the simulator does not do.
  EXPECT_EQ(cuModuleLoadDataEx(&module, "not device code", 0, nullptr, nullptr), CUDA_ERROR_INVALID_IMAGE);
  CUlinkState link = nullptr;
  ASSERT_EQ(cuLinkCreate_v2(0, nullptr, nullptr, &link), CUDA_SUCCESS);
  auto cubin = sample_cubin("k");
  EXPECT_EQ(cuLinkAddData_v2(link, CU_JIT_INPUT_CUBIN, cubin.data(), cubin.size(), "k.cubin", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  char text[] = "neither";
  EXPECT_EQ(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, text, sizeof text, "bad.ptx", 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_IMAGE);
  void *linked = nullptr;
  size_t linked_size = 0;
  EXPECT_EQ(cuLinkComplete(link, &linked, &linked_size), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuLinkDestroy(link), CUDA_SUCCESS);
}
