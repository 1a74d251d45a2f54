// The keyed hash behind the INTEGRITY_CHECK export table (sim_export_tables.cpp).
//
// A CUDA runtime asks the driver for a 16-byte answer that it computes itself too, and uses
// the driver only if the two agree. The answer is HMAC (RFC 2104) over MD2 (RFC 1319) with
// a fixed 16-byte key, of: the driver's version, the runtime's version, the process id, the
// calling thread (the low 32 bits of pthread_self), the addresses of the CUDART_INTERFACE
// table, of the INTEGRITY_CHECK table and of that table's slot 1, and the Unix time the
// runtime passed; then, per device, its UUID and PCI domain, bus and device numbers. The
// structure, the key and the layout are as the ZLUDA project documents them
// (github.com/vosen/ZLUDA, dark_api/src/lib.rs, integrity_check); the CUDA 13.0 runtime
// accepting the simulator is the test of it (tests/victims/runtime_*.cu).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace leaseguard::sim {

using Md2Digest = std::array<uint8_t, 16>;

// MD2 of `size` bytes (RFC 1319).
Md2Digest md2(const uint8_t *data, size_t size);

// HMAC-MD2 with a 16-byte key (MD2's block size, so the key is used as it is).
Md2Digest hmac_md2(const std::array<uint8_t, 16> &key, const uint8_t *data, size_t size);

struct IntegrityDevice {
  uint8_t uuid[16];
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
};

struct IntegrityInput {
  uint32_t driver_version;
  uint32_t runtime_version;
  uint32_t process;
  uint32_t thread;
  const void *cudart_table;
  const void *integrity_table;
  const void *integrity_slot;
  uint64_t unix_seconds;
  std::vector<IntegrityDevice> devices;
};

// The two 64-bit words the runtime expects (little-endian halves of the digest).
std::array<uint64_t, 2> integrity_answer(const IntegrityInput &input);

}  // namespace leaseguard::sim
