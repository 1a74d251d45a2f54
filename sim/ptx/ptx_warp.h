// A warp as the interpreter's handlers see it: registers, lanes, the memory its threads
// reach, and how an access is checked (ptx_machine.h says the rules).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "ptx_machine.h"
#include "ptx_program.h"

namespace leaseguard::sim::ptx {

constexpr unsigned kMaxCallDepth = 32;

// Ranges of device memory a worker has found valid, so that most accesses look up nothing.
struct RangeCache {
  static constexpr unsigned kRanges = 8;
  uint64_t begin[kRanges] = {};
  uint64_t end[kRanges] = {};
  unsigned next = 0;
  const DeviceMemory *memory = nullptr;

  // How many bytes from `address` to the end of the memory holding it (0: none).
  uint64_t extent(uint64_t address) {
    for (unsigned i = 0; i < kRanges; ++i)
      if (address >= begin[i] && address < end[i]) return end[i] - address;
    uint64_t base = 0, size = 0;
    if (memory->range_of == nullptr || !memory->range_of(address, &base, &size)) return 0;
    return base + size - address;
  }
  bool contains(uint64_t address, uint64_t bytes) {
    for (unsigned i = 0; i < kRanges; ++i)
      if (address >= begin[i] && address - begin[i] + bytes <= end[i] - begin[i]) return true;
    uint64_t base = 0, size = 0;
    if (memory->range_of == nullptr || !memory->range_of(address, &base, &size)) return false;
    begin[next] = base;
    end[next] = base + size;
    next = (next + 1) % kRanges;
    return address - base + bytes <= size;
  }
};

struct Warp {
  uint64_t *registers = nullptr;  // Program::registers x 32
  uint32_t pc[kWarpSize] = {};
  uint32_t live = 0;     // lanes that exist and have not exited
  uint32_t waiting = 0;  // lanes at the block's barrier
  uint32_t index = 0;    // within its block
  uint32_t carry = 0;    // add.cc / sub.cc's carry, a bit a lane
  uint8_t depth[kWarpSize] = {};
  uint32_t returns[kWarpSize][kMaxCallDepth] = {};

  unsigned char *shared = nullptr;  // the block's
  uint32_t shared_size = 0;
  unsigned char *frames = nullptr;        // this warp's lanes' frames, lane l at frames + l * frame_size
  unsigned char *block_frames = nullptr;  // every thread's of the block
  uint64_t block_frames_size = 0;
  uint32_t frame_size = 0;
  const unsigned char *arguments = nullptr;
  uint32_t arguments_size = 0;
  RangeCache *ranges = nullptr;

  // Set by a handler that faults; the block stops after the instruction.
  LaunchStatus fault = LaunchStatus::Done;
  std::string fault_message;
  std::string *printed = nullptr;

  template <typename T>
  T get(uint32_t r, unsigned lane) const {
    T value;
    std::memcpy(&value, &registers[r * kWarpSize + lane], sizeof value);
    return value;
  }
  template <typename T>
  void put(uint32_t r, unsigned lane, T value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof value);
    registers[r * kWarpSize + lane] = bits;
  }
  uint64_t &slot(uint32_t r, unsigned lane) { return registers[r * kWarpSize + lane]; }

  // The host address of `bytes` bytes at `address` in `space` for `lane`, or null after
  // recording the fault.
  unsigned char *reach(uint64_t address, uint32_t bytes, Space space, unsigned lane, const Instruction &instruction);
  void raise(LaunchStatus status, const Instruction &instruction, const char *what, uint64_t address);
};

template <typename Lane>
inline void each_lane(uint32_t lanes, Lane lane) {
  if (lanes == UINT32_MAX) {
    for (unsigned l = 0; l < kWarpSize; ++l) lane(l);
  } else {
    while (lanes != 0) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(lanes));
      lanes &= lanes - 1;
      lane(l);
    }
  }
}

}  // namespace leaseguard::sim::ptx
