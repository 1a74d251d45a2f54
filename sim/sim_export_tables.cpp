// cuGetExportTable of the simulated driver: the driver's private tables, asked for by id.
//
// The CUDA runtime (libcudart.so.13 and libcudart_static.a alike) talks to the driver through
// the public entry points it looks up with cuGetProcAddress and through these tables, whose
// ids and slots NVIDIA does not document. A table is an array of pointers; in most, slot 0
// holds the table's size in bytes and the others are functions. Every slot here is callable:
// a slot the simulator does not implement answers CUDA_ERROR_NOT_SUPPORTED and says once, on
// stderr, which table and slot the caller wanted, so a runtime that needs more fails with a
// name instead of a jump to address zero.
//
// How they were found: LEASEGUARD_SIM_PROBE=1 (sim_faults.h) makes every slot print its table,
// slot and first six integer arguments (all a register-passed call can carry) before it runs,
// and answers ids the simulator does not know with a table of such slots. Running the
// toolkit's own runtime under it (tests/victims/runtime_leaks.cu) shows which tables and
// slots it uses;
// the meaning of each slot comes from the probe's arguments and from the ZLUDA project's
// published notes on these tables (github.com/vosen/ZLUDA, dark_api/src/lib.rs), cited per
// table below. Ids are printed and written as their 16 bytes in memory order.
//
// The 13.0 runtime asks for one more, f8cff951-2146-8b4e-b9e2-fb469e7c0dd9, before cuInit,
// and calls no slot of it when given a probe table; refused, as every unknown id is, it goes
// on (its tests pass without it), so the simulator does not have it.
#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include <pthread.h>
#include <unistd.h>

#include "lg_cuda.h"
#include "sim_device.h"
#include "sim_entry.h"
#include "sim_integrity.h"

using leaseguard::sim::probing;
using leaseguard::sim::SimDriver;

namespace {

constexpr size_t kMaxSlots = 32;
using Slot = const void *;

// ---- CUDART_INTERFACE 6bd5fb6c-5bf4-e74a-8987-d93912fd9df9 (ZLUDA: CUDART_INTERFACE) ----
// Slot 2 (pctx, device): the runtime's first call at initialisation; it retains the device's
// primary context and returns it (probe: a pointer to a CUcontext and device 0; ZLUDA
// implements it as a primary-context retain).
CUresult cudart_retain_primary(CUcontext *pctx, CUdevice device) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  SimDriver &driver = SimDriver::instance();
  if (!driver.initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= driver.device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return driver.retain_primary(device, pctx);
}

// ---- TOOLS_RUNTIME_CALLBACK_HOOKS a094798c-2e74-2e74-93f2-0800200c0a66 ----
// Slots 2 and 6 (pointer out, size out): hand the runtime two buffers the driver owns, which
// profiling tools fill with callbacks; nothing reads them here. ZLUDA answers with zeroed
// buffers of 1024 and 14 32-bit words; the sizes are reported in words, as there.
uint32_t g_tool_hooks_buffer_a[1024];
uint32_t g_tool_hooks_buffer_b[14];
// (ZLUDA declares them returning nothing; a status in the return register is ignored.)
CUresult tool_hooks_buffer_a(void **buffer, size_t *size) {
  if (buffer != nullptr) *buffer = g_tool_hooks_buffer_a;
  if (size != nullptr) *size = sizeof g_tool_hooks_buffer_a / sizeof g_tool_hooks_buffer_a[0];
  return CUDA_SUCCESS;
}
CUresult tool_hooks_buffer_b(void **buffer, size_t *size) {
  if (buffer != nullptr) *buffer = g_tool_hooks_buffer_b;
  if (size != nullptr) *size = sizeof g_tool_hooks_buffer_b / sizeof g_tool_hooks_buffer_b[0];
  return CUDA_SUCCESS;
}

// ---- TOOLS_TLS 42d85a81-23f6-cb47-8298-f6e78a3aecdc ----
// Requested at initialisation; the runtime reads only its size (slot 0, four slots), and no
// slot is called (probe). ZLUDA's table has the same shape.

// ---- CONTEXT_LOCAL_STORAGE c693336e-1121-df11-a8c3-68f355d89593 ----
// No size slot: slot 0 puts (context, key, value, destructor), slot 1 deletes (context,
// key), slot 2 gets (value out, context, key); a null context means the current one. The
// runtime keeps its per-context state here, and the destructor is how it hears that the
// context ended (cuDevicePrimaryCtxReset under cudaDeviceReset, a destroy). ZLUDA
// (CONTEXT_LOCAL_STORAGE_INTERFACE_V0301) describes the same slots; a missing key answers
// CUDA_ERROR_INVALID_HANDLE there and here.
CUresult storage_put(CUcontext ctx, void *key, void *value, leaseguard::sim::StorageDestructor destructor) {
  return SimDriver::instance().storage_put(ctx, {key, value, destructor});
}
CUresult storage_delete(CUcontext ctx, void *key) { return SimDriver::instance().storage_delete(ctx, key); }
CUresult storage_get(void **value, CUcontext ctx, void *key) {
  return SimDriver::instance().storage_get(ctx, key, value);
}

// ---- CONTEXT_CHECKS 263e8860-7cd2-6143-92f6-bbd5006dfa7e ----
// Slot 3 takes nothing and returns a flag word the runtime tests; 0 lets it go on (probe:
// called once at initialisation; ZLUDA: "seems to always return 0"). Slot 2 (context, flags
// out, pointer out) answers flags 0, as ZLUDA does.
CUresult context_check_flags(CUcontext, uint32_t *flags, const void **) {
  if (flags != nullptr) *flags = 0;
  return CUDA_SUCCESS;
}
uint32_t context_check_word() { return 0; }

// ---- INTEGRITY_CHECK d4082055-bde6-704b-8d34-ba123c66e1f2 ----
// Slot 1 (runtime version, Unix time, two 64-bit words out): the runtime checks that the
// driver it loaded is one it may use. Probe: cudart 13.0 calls it three times at
// initialisation, with versions 13000, 13001 and 13002 and the current time. For versions
// ending in 0 or 1 the answer is a fixed pair of words; for the others it is the keyed hash
// in sim_integrity.h. Both are as ZLUDA documents them; cudart 13.0 going on past its
// initialisation is the evidence that they are right.
CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t *words);

#define SLOT(function) reinterpret_cast<Slot>(&function)

struct TableSpec {
  const char *name;
  CUuuid id;
  size_t slots;         // how many pointers the table has
  bool size_in_slot_0;  // slot 0 holds slots * sizeof(void *)
  std::array<Slot, kMaxSlots> implemented;
};

constexpr CUuuid make_id(std::array<unsigned char, 16> bytes) {
  CUuuid id{};
  for (size_t i = 0; i < bytes.size(); ++i) id.bytes[i] = static_cast<char>(bytes[i]);
  return id;
}

const TableSpec kTables[] = {
    {"CUDART_INTERFACE",
     make_id({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}),
     13,
     true,
     {nullptr, nullptr, SLOT(cudart_retain_primary)}},
    {"TOOLS_RUNTIME_CALLBACK_HOOKS",
     make_id({0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66}),
     7,
     true,
     {nullptr, nullptr, SLOT(tool_hooks_buffer_a), nullptr, nullptr, nullptr, SLOT(tool_hooks_buffer_b)}},
    {"TOOLS_TLS",
     make_id({0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}),
     4,
     true,
     {}},
    {"CONTEXT_LOCAL_STORAGE",
     make_id({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93}),
     4,
     false,
     {SLOT(storage_put), SLOT(storage_delete), SLOT(storage_get)}},
    {"CONTEXT_CHECKS",
     make_id({0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e}),
     4,
     true,
     {nullptr, nullptr, SLOT(context_check_flags), SLOT(context_check_word)}},
    {"INTEGRITY_CHECK",
     make_id({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2}),
     3,
     true,
     {nullptr, SLOT(integrity_check)}},
};
constexpr size_t kTableCount = sizeof kTables / sizeof kTables[0];

#undef SLOT

// Tables handed to callers: the known ones first, then (under the probe) one per unknown id.
constexpr size_t kProbeTables = 8;
constexpr size_t kRows = kTableCount + kProbeTables;
CUuuid g_probe_ids[kProbeTables];
std::atomic<size_t> g_probe_ids_used{0};

const CUuuid &row_id(size_t row) { return row < kTableCount ? kTables[row].id : g_probe_ids[row - kTableCount]; }

void print_id(FILE *out, const CUuuid &id) {
  for (size_t i = 0; i < sizeof id.bytes; ++i) {
    std::fprintf(out, "%02x", static_cast<unsigned char>(id.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) std::fputc('-', out);
  }
}

void print_table(FILE *out, size_t row) {
  std::fputs(row < kTableCount ? kTables[row].name : "unknown table", out);
  std::fputc(' ', out);
  print_id(out, row_id(row));
}

using AnySlot = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

// What every slot pointer handed out is: it runs the implementation if there is one (printing
// the call first under the probe), else says once what was asked for and refuses. Calling an
// implementation through six integer parameters passes its own (at most six, all integer or
// pointer) unchanged in their registers; every implementation returns a CUresult, so the
// return register holds a status. The implementation is read through a volatile pointer so
// that the compiler does not reason about calling it through another function type.
template <size_t Row, size_t Index>
uintptr_t slot_entry(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5) {
  const Slot implementation =
      Row < kTableCount ? *static_cast<const volatile Slot *>(&kTables[Row].implemented[Index]) : nullptr;
  if (probing()) {
    std::fputs("leaseguard-sim: export ", stderr);
    print_table(stderr, Row);
    std::fprintf(stderr,
                 " slot %zu (%#" PRIxPTR ", %#" PRIxPTR ", %#" PRIxPTR ", %#" PRIxPTR ", %#" PRIxPTR ", %#" PRIxPTR
                 ")%s\n",
                 Index, a0, a1, a2, a3, a4, a5, implementation != nullptr ? "" : ": not implemented");
  }
  if (implementation != nullptr) {
    const uintptr_t status = reinterpret_cast<AnySlot>(const_cast<void *>(implementation))(a0, a1, a2, a3, a4, a5);
    if (probing()) std::fprintf(stderr, "leaseguard-sim:   -> %" PRIuPTR "\n", status);
    return status;
  }
  static std::atomic<bool> said{false};
  if (!probing() && !said.exchange(true)) {
    std::fputs("leaseguard-sim: the CUDA runtime called export ", stderr);
    print_table(stderr, Row);
    std::fprintf(stderr, " slot %zu, which the simulator does not implement\n", Index);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <size_t Row, size_t... Index>
std::array<Slot, kMaxSlots> make_row(std::index_sequence<Index...>) {
  const bool sized = Row >= kTableCount || kTables[Row].size_in_slot_0;
  const size_t slots = Row < kTableCount ? kTables[Row].slots : kMaxSlots;
  return {{(Index == 0 && sized ? reinterpret_cast<Slot>(slots * sizeof(Slot))
                                : reinterpret_cast<Slot>(&slot_entry<Row, Index>))...}};
}

template <size_t... Row>
std::array<std::array<Slot, kMaxSlots>, kRows> make_rows(std::index_sequence<Row...>) {
  return {{make_row<Row>(std::make_index_sequence<kMaxSlots>())...}};
}

const std::array<std::array<Slot, kMaxSlots>, kRows> &rows() {
  static const auto built = make_rows(std::make_index_sequence<kRows>());
  return built;
}

// Under the probe, an id the simulator does not know gets a row of printing slots.
const Slot *probe_row(const CUuuid &id) {
  const size_t used = g_probe_ids_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i)
    if (std::memcmp(&g_probe_ids[i], &id, sizeof id) == 0) return rows()[kTableCount + i].data();
  if (used == kProbeTables) return nullptr;
  g_probe_ids[used] = id;
  g_probe_ids_used.store(used + 1, std::memory_order_release);
  return rows()[kTableCount + used].data();
}

size_t row_of(const char *name) {
  for (size_t row = 0; row < kTableCount; ++row)
    if (std::string_view(kTables[row].name) == name) return row;
  return kTableCount;
}

CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t *words) {
  if (words == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (version % 10 == 0 || version % 10 == 1) {
    words[0] = version % 10 == 0 ? 0x3341181c03cb675cULL : 0x1841181c03cb675cULL;
    words[1] = 0x8ed383aa1f4cd1e8ULL;
    return CUDA_SUCCESS;
  }
  leaseguard::sim::IntegrityInput input{};
  int driver_version = 0;
  if (CUresult status = cuDriverGetVersion(&driver_version); status != CUDA_SUCCESS) return status;
  input.driver_version = static_cast<uint32_t>(driver_version);
  input.runtime_version = version;
  input.process = static_cast<uint32_t>(getpid());
  input.thread = static_cast<uint32_t>(pthread_self());
  input.cudart_table = rows()[row_of("CUDART_INTERFACE")].data();
  input.integrity_table = rows()[row_of("INTEGRITY_CHECK")].data();
  input.integrity_slot = rows()[row_of("INTEGRITY_CHECK")][1];
  input.unix_seconds = unix_seconds;
  int count = 0;
  if (CUresult status = cuDeviceGetCount(&count); status != CUDA_SUCCESS) return status;
  for (CUdevice device = 0; device < count; ++device) {
    leaseguard::sim::IntegrityDevice entry{};
    CUuuid uuid;
    if (CUresult status = cuDeviceGetUuid(&uuid, device); status != CUDA_SUCCESS) return status;
    std::memcpy(entry.uuid, uuid.bytes, sizeof entry.uuid);
    int value = 0;
    cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device);
    entry.pci_domain = value;
    cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
    entry.pci_bus = value;
    cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device);
    entry.pci_device = value;
    input.devices.push_back(entry);
  }
  const std::array<uint64_t, 2> answer = leaseguard::sim::integrity_answer(input);
  words[0] = answer[0];
  words[1] = answer[1];
  return CUDA_SUCCESS;
}

}  // namespace

// Unknown ids: CUDA_ERROR_INVALID_VALUE and no table, which is what the runtime meets on a
// driver too old to have a table and what ZLUDA answers (its get_export_table).
LG_SIM_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  LG_SIM_ENTRY(cuGetExportTable);
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  for (size_t row = 0; row < kTableCount; ++row) {
    if (std::memcmp(&kTables[row].id, id, sizeof *id) != 0) continue;
    *table = rows()[row].data();
    if (probing()) {
      std::fputs("leaseguard-sim: export ", stderr);
      print_table(stderr, row);
      std::fputs(" requested\n", stderr);
    }
    return CUDA_SUCCESS;
  }
  if (probing()) {
    std::fputs("leaseguard-sim: export ", stderr);
    print_id(stderr, *id);
    std::fputs(" requested: unknown, answered with a probe table\n", stderr);
    *table = probe_row(*id);
    return *table != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
