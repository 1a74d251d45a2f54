// What the simulator reads out of device code nvcc makes: the names of its kernels and its
// global variables (`__device__`, `__constant__`) with their sizes and initial bytes.
//
// The simulator cannot run device code, but a library loaded from it must answer as a
// driver does: cuLibraryGetKernel knows which kernels exist, and cuLibraryGetGlobal gives
// each variable device memory of its size holding its initial value (cuBLAS reads its
// tables this way during cublasCreate).
//
// Formats, as nvcc and the CUDA 13 toolkit's libraries write them:
//   - the fat binary wrapper nvcc embeds (magic 0x466243b1), version 1 pointing at one fat
//     binary, version 2 at a null-terminated list of them (relocatable device code);
//   - a fat binary (magic 0xba55ed50): a 16-byte header (magic, version, header size, size
//     of the entries) and then entries, each a 64-byte header (kind 1 PTX / 2 ELF, header
//     size, stored size, compressed size, SM version, flags with 0x2000 for LZ4 and 0x8000
//     for zstd compression, uncompressed size) followed by its payload;
//   - a cubin: a 64-bit ELF whose kernels are STT_FUNC symbols marked STO_CUDA_ENTRY (0x10
//     in st_other) and whose variables are STT_OBJECT symbols in .nv.global (zeroed),
//     .nv.global.init or .nv.constantN (initialised), a `__managed__` one marked 0x04 in
//     st_other (nvcc 13's cubins, checked here);
//   - PTX text: `.entry NAME(` and module-scope `.global` / `.const` declarations.
// The layout of fat binaries follows public reverse-engineering notes (the ZLUDA project's
// dark_api/src/fatbin.rs and cuda_types/src/dark_api.rs); the libraries of the toolkit
// installed here were checked against it (cuBLAS 13: every entry zstd-compressed).
//
// Of a fat binary's entries, the simulator reads the ELF entries of the highest SM version
// its device runs (9.0 and below), else the PTX of the highest such version, as a driver
// picks what to load.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace leaseguard::sim {

struct DeviceVariable {
  size_t size = 0;
  std::vector<unsigned char> initial;  // its first bytes (the rest zero); empty: all zero
  bool managed = false;                // `__managed__`: st_other 0x04 / .attribute(.managed)
};

struct DeviceCode {
  std::set<std::string> kernels;
  std::map<std::string, DeviceVariable> variables;
  // The PTX the interpreter runs (sim/ptx/): of a fat binary, the entry of the highest
  // version the device runs, whatever machine code it also holds; empty: none.
  std::string ptx;
  // The SM versions of its machine code (ELF) entries: what a launch of code with no PTX
  // names when it is refused.
  std::set<unsigned> machine_code;
};

enum class DeviceCodeStatus {
  Read,            // `out` holds what the code declares
  NotCode,         // not device code in any format above
  Corrupt,         // device code that does not decode (CUDA_ERROR_INVALID_IMAGE)
  NoBinaryForGpu,  // no entry the simulated device can run (CUDA_ERROR_NO_BINARY_FOR_GPU)
};

// The highest SM version the simulated device runs (compute capability 9.0).
constexpr unsigned kDeviceSmVersion = 90;

// `image` as the driver API passes it: no size; each format's headers say how far it spans.
DeviceCodeStatus read_device_code(const void *image, DeviceCode &out);
// A fat binary, a cubin or PTX in `size` bytes: nothing outside them is read (fuzzed).
DeviceCodeStatus read_device_code(const void *data, size_t size, DeviceCode &out);

// For tests: one fat binary entry's header fields, as read_device_code reads them.
struct FatbinEntryHeader {
  unsigned short kind;
  unsigned short version;
  unsigned header_size;
  unsigned stored_size;
  unsigned reserved0;
  unsigned compressed_size;
  unsigned reserved1;
  unsigned reserved2;
  unsigned sm_version;
  unsigned bit_width;
  unsigned reserved3;
  unsigned long long flags;
  unsigned long long reserved4;
  unsigned long long uncompressed_size;
};
static_assert(sizeof(FatbinEntryHeader) == 64, "a fat binary entry's header is 64 bytes");

constexpr unsigned kFatbinWrapperMagic = 0x466243b1;
constexpr unsigned kFatbinMagic = 0xba55ed50;
constexpr unsigned short kFatbinEntryPtx = 1;
constexpr unsigned short kFatbinEntryElf = 2;
constexpr unsigned long long kFatbinCompressedLz4 = 0x2000;
constexpr unsigned long long kFatbinCompressedZstd = 0x8000;

}  // namespace leaseguard::sim
