// Every driver and runtime entry point leaseguard intercepts, and what it does to memory: the
// one table the rest is made from.
//
// Why an X-macro and not a generated header: the table is read by the compiler in four
// places that need different things from each row (the core's ids and rules, the preload's
// hook and cuGetProcAddress tables, the reclaim dispatch, the tests' lists), each of them a
// few lines of macro expansion next to the code that uses it; a generator would add a build
// step and a second language for what the preprocessor does in place. The rows are checked
// at compile time below (an allocating entry point has a release of its own family and
// vendor, and a kind).
//
// Adding an entry point (docs/entry-points.md walks through one): a row here, its
// declaration in abi/ (lg_cuda.h or lg_hip.h, which gives the hook its signature), and its
// hook: one line in interpose/ forwarding to the template for its shape, or, where its
// arguments are unusual, a short body. Nothing else names it.
//
// X(name, id, vendor, role, family, kind, release, at_context_end, proc_family, since, per_thread, what)
//   name           the exported symbol, as the ABI declares it
//   id             its number in journals (leaseguard::Api): append only, never renumber or reuse
//   vendor         Cuda (the driver API) or Hip (the HIP runtime)
//   role           Allocates (creates a value that `release` gives back), Releases (gives back
//                  a value of its family), EndsContext (a context destroy or device reset frees
//                  what was made in it), Maps / Unmaps (VMM mappings, which a reservation's
//                  reclaim undoes), LooksUp (cuGetProcAddress), SetsContext (changes which
//                  context is current on the calling thread: the preload keeps each thread's
//                  current context and asks the driver again after one of these),
//                  LocatesGlobal (hands out where a module's global variable lives: device
//                  memory the reachability scan reads as the program's roots), UnloadsCode
//                  (a module or library unloaded: its globals are gone)
//   family         what it creates or releases (resource_rules.h): a release frees only
//                  values of its own family (cuMemFree does not close an IPC mapping)
//   kind           what an allocation is, in reports (Allocates only; Kind::Count otherwise)
//   release        the entry point that gives back what it allocates, of the same generation
//                  (cuMemAlloc's is cuMemFree, cuMemAlloc_v2's is cuMemFree_v2)
//   at_context_end Dies: a context destroy (HIP: a device reset) frees it; Outlives: it stays
//   proc_family    the name cuGetProcAddress is asked for; since: the cudaVersion that
//   since          introduced this variant; per_thread: the per-thread default stream
//   per_thread     variant (_ptsz). HIP: the name itself, 0, false
//   what           what it is, in words for reports
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace leaseguard {

// Kinds of allocation, as reports name them. `Ipc` is another process's memory opened here,
// `Registered` host memory pinned for the device, `External` memory imported from another
// API (the imported object or a buffer mapped from it), `Pool` a memory pool the program made.
enum class Kind : uint8_t {
  Device = 0,
  Pitched,
  Managed,
  Async,
  Host,
  Vmm,
  Array,
  Pool,
  Ipc,
  Registered,
  External,
  Count
};

// The family an entry point creates or releases (see resource_rules.h for what follows).
enum class Family : uint8_t {
  DeviceMemory,
  HostMemory,
  Reservation,
  VmmHandle,
  Array,
  MipmappedArray,
  Pool,
  Ipc,
  Registration,
  ExternalMemory,
  Context,
  Other
};

enum class Vendor : uint8_t { Cuda, Hip };
enum class Role : uint8_t {
  Allocates,
  Releases,
  EndsContext,
  Maps,
  Unmaps,
  LooksUp,
  SetsContext,
  LocatesGlobal,
  UnloadsCode
};
enum class AtContextEnd : uint8_t { Dies, Outlives };

// clang-format off
#define LG_ENTRY_POINTS(X) \
  /* CUDA: device, pitched, managed, pinned host and stream-ordered memory */ \
  X(cuMemAlloc,                   1, Cuda, Allocates, DeviceMemory, Device,  cuMemFree,            Dies,           \
      "cuMemAlloc",              2000,  false, "device memory")                                                    \
  X(cuMemAlloc_v2,                2, Cuda, Allocates, DeviceMemory, Device,  cuMemFree_v2,         Dies,           \
      "cuMemAlloc",              3020,  false, "device memory")                                                    \
  X(cuMemAllocPitch,              3, Cuda, Allocates, DeviceMemory, Pitched, cuMemFree,            Dies,           \
      "cuMemAllocPitch",         2000,  false, "pitched device memory")                                            \
  X(cuMemAllocPitch_v2,           4, Cuda, Allocates, DeviceMemory, Pitched, cuMemFree_v2,         Dies,           \
      "cuMemAllocPitch",         3020,  false, "pitched device memory")                                            \
  X(cuMemAllocManaged,            5, Cuda, Allocates, DeviceMemory, Managed, cuMemFree_v2,         Dies,           \
      "cuMemAllocManaged",       6000,  false, "managed memory")                                                   \
  X(cuMemAllocHost,               6, Cuda, Allocates, HostMemory,   Host,    cuMemFreeHost,        Dies,           \
      "cuMemAllocHost",          2000,  false, "pinned host memory")                                               \
  X(cuMemAllocHost_v2,            7, Cuda, Allocates, HostMemory,   Host,    cuMemFreeHost,        Dies,           \
      "cuMemAllocHost",          3020,  false, "pinned host memory")                                               \
  X(cuMemHostAlloc,               8, Cuda, Allocates, HostMemory,   Host,    cuMemFreeHost,        Dies,           \
      "cuMemHostAlloc",          2020,  false, "pinned host memory")                                               \
  X(cuMemAllocAsync,              9, Cuda, Allocates, DeviceMemory, Async,   cuMemFreeAsync,       Outlives,       \
      "cuMemAllocAsync",         11020, false, "stream-ordered memory")                                            \
  X(cuMemAllocAsync_ptsz,        10, Cuda, Allocates, DeviceMemory, Async,   cuMemFreeAsync_ptsz,  Outlives,       \
      "cuMemAllocAsync",         11020, true,  "stream-ordered memory")                                            \
  X(cuMemAllocFromPoolAsync,     11, Cuda, Allocates, DeviceMemory, Async,   cuMemFreeAsync,       Outlives,       \
      "cuMemAllocFromPoolAsync", 11020, false, "stream-ordered memory")                                            \
  X(cuMemAllocFromPoolAsync_ptsz,12, Cuda, Allocates, DeviceMemory, Async,   cuMemFreeAsync_ptsz,  Outlives,       \
      "cuMemAllocFromPoolAsync", 11020, true,  "stream-ordered memory")                                            \
  X(cuMemFree,                   13, Cuda, Releases,  DeviceMemory, Count,   cuMemFree,            Dies,           \
      "cuMemFree",               2000,  false, "")                                                                 \
  X(cuMemFree_v2,                14, Cuda, Releases,  DeviceMemory, Count,   cuMemFree_v2,         Dies,           \
      "cuMemFree",               3020,  false, "")                                                                 \
  X(cuMemFreeHost,               15, Cuda, Releases,  HostMemory,   Count,   cuMemFreeHost,        Dies,           \
      "cuMemFreeHost",           2000,  false, "")                                                                 \
  X(cuMemFreeAsync,              16, Cuda, Releases,  DeviceMemory, Count,   cuMemFreeAsync,       Dies,           \
      "cuMemFreeAsync",          11020, false, "")                                                                 \
  X(cuMemFreeAsync_ptsz,         17, Cuda, Releases,  DeviceMemory, Count,   cuMemFreeAsync_ptsz,  Dies,           \
      "cuMemFreeAsync",          11020, true,  "")                                                                 \
  /* CUDA: contexts, whose end frees what was allocated in them */ \
  X(cuCtxDestroy,                18, Cuda, EndsContext, Context,    Count,   cuCtxDestroy,         Dies,           \
      "cuCtxDestroy",            2000,  false, "")                                                                 \
  X(cuCtxDestroy_v2,             19, Cuda, EndsContext, Context,    Count,   cuCtxDestroy_v2,      Dies,           \
      "cuCtxDestroy",            4000,  false, "")                                                                 \
  X(cuDevicePrimaryCtxRelease,   20, Cuda, EndsContext, Context,    Count,   cuDevicePrimaryCtxRelease,    Dies,   \
      "cuDevicePrimaryCtxRelease", 7000,  false, "")                                                               \
  X(cuDevicePrimaryCtxRelease_v2,21, Cuda, EndsContext, Context,    Count,   cuDevicePrimaryCtxRelease_v2, Dies,   \
      "cuDevicePrimaryCtxRelease", 11000, false, "")                                                               \
  X(cuDevicePrimaryCtxReset,     22, Cuda, EndsContext, Context,    Count,   cuDevicePrimaryCtxReset,      Dies,   \
      "cuDevicePrimaryCtxReset",   7000,  false, "")                                                               \
  X(cuDevicePrimaryCtxReset_v2,  23, Cuda, EndsContext, Context,    Count,   cuDevicePrimaryCtxReset_v2,   Dies,   \
      "cuDevicePrimaryCtxReset",   11000, false, "")                                                               \
  /* CUDA: virtual memory management */ \
  X(cuMemCreate,                 24, Cuda, Allocates, VmmHandle,    Vmm,     cuMemRelease,         Outlives,       \
      "cuMemCreate",             10020, false, "VMM physical memory handle")                                       \
  X(cuMemRelease,                25, Cuda, Releases,  VmmHandle,    Count,   cuMemRelease,         Outlives,       \
      "cuMemRelease",            10020, false, "")                                                                 \
  X(cuMemAddressReserve,         26, Cuda, Allocates, Reservation,  Vmm,     cuMemAddressFree,     Outlives,       \
      "cuMemAddressReserve",     10020, false, "VMM reserved address range")                                       \
  X(cuMemAddressFree,            27, Cuda, Releases,  Reservation,  Count,   cuMemAddressFree,     Outlives,       \
      "cuMemAddressFree",        10020, false, "")                                                                 \
  X(cuMemRetainAllocationHandle, 28, Cuda, Allocates, VmmHandle,    Vmm,     cuMemRelease,         Outlives,       \
      "cuMemRetainAllocationHandle", 11000, false, "VMM handle reference")                                         \
  X(cuMemImportFromShareableHandle, 29, Cuda, Allocates, VmmHandle, Vmm,     cuMemRelease,         Outlives,       \
      "cuMemImportFromShareableHandle", 10020, false, "VMM handle reference")                                      \
  /* CUDA: memory pools */ \
  X(cuMemPoolCreate,             30, Cuda, Allocates, Pool,         Pool,    cuMemPoolDestroy,     Outlives,       \
      "cuMemPoolCreate",         11020, false, "memory pool")                                                      \
  X(cuMemPoolDestroy,            31, Cuda, Releases,  Pool,         Count,   cuMemPoolDestroy,     Outlives,       \
      "cuMemPoolDestroy",        11020, false, "")                                                                 \
  /* CUDA: arrays */ \
  X(cuArrayCreate,               32, Cuda, Allocates, Array,        Array,   cuArrayDestroy,       Dies,           \
      "cuArrayCreate",           2000,  false, "array")                                                            \
  X(cuArrayCreate_v2,            33, Cuda, Allocates, Array,        Array,   cuArrayDestroy,       Dies,           \
      "cuArrayCreate",           3020,  false, "array")                                                            \
  X(cuArray3DCreate,             34, Cuda, Allocates, Array,        Array,   cuArrayDestroy,       Dies,           \
      "cuArray3DCreate",         2000,  false, "array")                                                            \
  X(cuArray3DCreate_v2,          35, Cuda, Allocates, Array,        Array,   cuArrayDestroy,       Dies,           \
      "cuArray3DCreate",         3020,  false, "array")                                                            \
  X(cuMipmappedArrayCreate,      36, Cuda, Allocates, MipmappedArray, Array, cuMipmappedArrayDestroy, Dies,        \
      "cuMipmappedArrayCreate",  5000,  false, "mipmapped array")                                                  \
  X(cuArrayDestroy,              37, Cuda, Releases,  Array,        Count,   cuArrayDestroy,       Dies,           \
      "cuArrayDestroy",          2000,  false, "")                                                                 \
  X(cuMipmappedArrayDestroy,     38, Cuda, Releases,  MipmappedArray, Count, cuMipmappedArrayDestroy, Dies,        \
      "cuMipmappedArrayDestroy", 5000,  false, "")                                                                 \
  /* CUDA: IPC mappings of another process's memory */ \
  X(cuIpcOpenMemHandle,          39, Cuda, Allocates, Ipc,          Ipc,     cuIpcCloseMemHandle,  Dies,           \
      "cuIpcOpenMemHandle",      4010,  false, "IPC mapping")                                                      \
  X(cuIpcOpenMemHandle_v2,       40, Cuda, Allocates, Ipc,          Ipc,     cuIpcCloseMemHandle,  Dies,           \
      "cuIpcOpenMemHandle",      11000, false, "IPC mapping")                                                      \
  X(cuIpcCloseMemHandle,         41, Cuda, Releases,  Ipc,          Count,   cuIpcCloseMemHandle,  Dies,           \
      "cuIpcCloseMemHandle",     4010,  false, "")                                                                 \
  /* CUDA: host memory registered for the device */ \
  X(cuMemHostRegister,           42, Cuda, Allocates, Registration, Registered, cuMemHostUnregister, Dies,         \
      "cuMemHostRegister",       4000,  false, "host memory registration")                                         \
  X(cuMemHostRegister_v2,        43, Cuda, Allocates, Registration, Registered, cuMemHostUnregister, Dies,         \
      "cuMemHostRegister",       6050,  false, "host memory registration")                                         \
  X(cuMemHostUnregister,         44, Cuda, Releases,  Registration, Count,   cuMemHostUnregister,  Dies,           \
      "cuMemHostUnregister",     4000,  false, "")                                                                 \
  /* CUDA: external memory (a buffer mapped from it is device memory, freed with cuMemFree) */ \
  X(cuImportExternalMemory,      45, Cuda, Allocates, ExternalMemory, External, cuDestroyExternalMemory, Outlives, \
      "cuImportExternalMemory", 10000, false, "imported external memory")                                          \
  X(cuExternalMemoryGetMappedBuffer, 46, Cuda, Allocates, DeviceMemory, External, cuMemFree_v2,  Dies,             \
      "cuExternalMemoryGetMappedBuffer", 10000, false, "buffer mapped from external memory")                       \
  X(cuDestroyExternalMemory,     47, Cuda, Releases,  ExternalMemory, Count, cuDestroyExternalMemory, Outlives,    \
      "cuDestroyExternalMemory", 10000, false, "")                                                                 \
  /* HIP: device, managed and pitched memory */ \
  X(hipMalloc,                   48, Hip,  Allocates, DeviceMemory, Device,  hipFree,              Dies,           \
      "hipMalloc",               0,     false, "device memory")                                                    \
  X(hipExtMallocWithFlags,       49, Hip,  Allocates, DeviceMemory, Device,  hipFree,              Dies,           \
      "hipExtMallocWithFlags",   0,     false, "device memory")                                                    \
  X(hipMallocManaged,            50, Hip,  Allocates, DeviceMemory, Managed, hipFree,              Dies,           \
      "hipMallocManaged",        0,     false, "managed memory")                                                   \
  X(hipMallocPitch,              51, Hip,  Allocates, DeviceMemory, Pitched, hipFree,              Dies,           \
      "hipMallocPitch",          0,     false, "pitched device memory")                                            \
  X(hipMemAllocPitch,            52, Hip,  Allocates, DeviceMemory, Pitched, hipFree,              Dies,           \
      "hipMemAllocPitch",        0,     false, "pitched device memory")                                            \
  X(hipMalloc3D,                 53, Hip,  Allocates, DeviceMemory, Pitched, hipFree,              Dies,           \
      "hipMalloc3D",             0,     false, "pitched device memory")                                            \
  /* HIP: arrays */ \
  X(hipMallocArray,              54, Hip,  Allocates, Array,        Array,   hipFreeArray,         Dies,           \
      "hipMallocArray",          0,     false, "array")                                                            \
  X(hipMalloc3DArray,            55, Hip,  Allocates, Array,        Array,   hipFreeArray,         Dies,           \
      "hipMalloc3DArray",        0,     false, "array")                                                            \
  X(hipArrayCreate,              56, Hip,  Allocates, Array,        Array,   hipArrayDestroy,      Dies,           \
      "hipArrayCreate",          0,     false, "array")                                                            \
  X(hipArray3DCreate,            57, Hip,  Allocates, Array,        Array,   hipArrayDestroy,      Dies,           \
      "hipArray3DCreate",        0,     false, "array")                                                            \
  /* HIP: pinned host memory */ \
  X(hipHostMalloc,               58, Hip,  Allocates, HostMemory,   Host,    hipHostFree,          Dies,           \
      "hipHostMalloc",           0,     false, "pinned host memory")                                               \
  X(hipHostAlloc,                59, Hip,  Allocates, HostMemory,   Host,    hipHostFree,          Dies,           \
      "hipHostAlloc",            0,     false, "pinned host memory")                                               \
  X(hipMallocHost,               60, Hip,  Allocates, HostMemory,   Host,    hipFreeHost,          Dies,           \
      "hipMallocHost",           0,     false, "pinned host memory")                                               \
  X(hipMemAllocHost,             61, Hip,  Allocates, HostMemory,   Host,    hipFreeHost,          Dies,           \
      "hipMemAllocHost",         0,     false, "pinned host memory")                                               \
  /* HIP: stream-ordered memory and pools */ \
  X(hipMallocAsync,              62, Hip,  Allocates, DeviceMemory, Async,   hipFreeAsync,         Dies,           \
      "hipMallocAsync",          0,     false, "stream-ordered memory")                                            \
  X(hipMallocFromPoolAsync,      63, Hip,  Allocates, DeviceMemory, Async,   hipFreeAsync,         Dies,           \
      "hipMallocFromPoolAsync",  0,     false, "stream-ordered memory")                                            \
  X(hipFreeAsync,                64, Hip,  Releases,  DeviceMemory, Count,   hipFreeAsync,         Dies,           \
      "hipFreeAsync",            0,     false, "")                                                                 \
  X(hipMemPoolCreate,            65, Hip,  Allocates, Pool,         Pool,    hipMemPoolDestroy,    Dies,           \
      "hipMemPoolCreate",        0,     false, "memory pool")                                                      \
  X(hipMemPoolDestroy,           66, Hip,  Releases,  Pool,         Count,   hipMemPoolDestroy,    Dies,           \
      "hipMemPoolDestroy",       0,     false, "")                                                                 \
  /* HIP: virtual memory management */ \
  X(hipMemCreate,                67, Hip,  Allocates, VmmHandle,    Vmm,     hipMemRelease,        Dies,           \
      "hipMemCreate",            0,     false, "VMM physical memory handle")                                       \
  X(hipMemRelease,               68, Hip,  Releases,  VmmHandle,    Count,   hipMemRelease,        Dies,           \
      "hipMemRelease",           0,     false, "")                                                                 \
  X(hipMemAddressReserve,        69, Hip,  Allocates, Reservation,  Vmm,     hipMemAddressFree,    Dies,           \
      "hipMemAddressReserve",    0,     false, "VMM reserved address range")                                       \
  X(hipMemAddressFree,           70, Hip,  Releases,  Reservation,  Count,   hipMemAddressFree,    Dies,           \
      "hipMemAddressFree",       0,     false, "")                                                                 \
  X(hipMemRetainAllocationHandle,71, Hip,  Allocates, VmmHandle,    Vmm,     hipMemRelease,        Dies,           \
      "hipMemRetainAllocationHandle", 0, false, "VMM handle reference")                                            \
  X(hipMemImportFromShareableHandle, 72, Hip, Allocates, VmmHandle, Vmm,     hipMemRelease,        Dies,           \
      "hipMemImportFromShareableHandle", 0, false, "VMM handle reference")                                         \
  /* HIP: registered host memory, IPC mappings */ \
  X(hipHostRegister,             73, Hip,  Allocates, Registration, Registered, hipHostUnregister, Dies,           \
      "hipHostRegister",         0,     false, "host memory registration")                                         \
  X(hipHostUnregister,           74, Hip,  Releases,  Registration, Count,   hipHostUnregister,    Dies,           \
      "hipHostUnregister",       0,     false, "")                                                                 \
  X(hipIpcOpenMemHandle,         75, Hip,  Allocates, Ipc,          Ipc,     hipIpcCloseMemHandle, Dies,           \
      "hipIpcOpenMemHandle",     0,     false, "IPC mapping")                                                      \
  X(hipIpcCloseMemHandle,        76, Hip,  Releases,  Ipc,          Count,   hipIpcCloseMemHandle, Dies,           \
      "hipIpcCloseMemHandle",    0,     false, "")                                                                 \
  /* HIP: releases of the memory above, and the device reset that frees everything on a device */ \
  X(hipFree,                     77, Hip,  Releases,  DeviceMemory, Count,   hipFree,              Dies,           \
      "hipFree",                 0,     false, "")                                                                 \
  X(hipFreeArray,                78, Hip,  Releases,  Array,        Count,   hipFreeArray,         Dies,           \
      "hipFreeArray",            0,     false, "")                                                                 \
  X(hipArrayDestroy,             79, Hip,  Releases,  Array,        Count,   hipArrayDestroy,      Dies,           \
      "hipArrayDestroy",         0,     false, "")                                                                 \
  X(hipHostFree,                 80, Hip,  Releases,  HostMemory,   Count,   hipHostFree,          Dies,           \
      "hipHostFree",             0,     false, "")                                                                 \
  X(hipFreeHost,                 81, Hip,  Releases,  HostMemory,   Count,   hipFreeHost,          Dies,           \
      "hipFreeHost",             0,     false, "")                                                                 \
  X(hipDeviceReset,              82, Hip,  EndsContext, Context,    Count,   hipDeviceReset,       Dies,           \
      "hipDeviceReset",          0,     false, "")                                                                 \
  /* Hooked, but making and freeing nothing of their own */ \
  X(cuMemMap,                    83, Cuda, Maps,      Other,        Count,   cuMemMap,             Dies,           \
      "cuMemMap",                10020, false, "")                                                                 \
  X(cuMemUnmap,                  84, Cuda, Unmaps,    Other,        Count,   cuMemUnmap,           Dies,           \
      "cuMemUnmap",              10020, false, "")                                                                 \
  X(hipMemMap,                   85, Hip,  Maps,      Other,        Count,   hipMemMap,            Dies,           \
      "hipMemMap",               0,     false, "")                                                                 \
  X(hipMemUnmap,                 86, Hip,  Unmaps,    Other,        Count,   hipMemUnmap,          Dies,           \
      "hipMemUnmap",             0,     false, "")                                                                 \
  X(cuGetProcAddress,            87, Cuda, LooksUp,   Other,        Count,   cuGetProcAddress,     Dies,           \
      "cuGetProcAddress",        11030, false, "")                                                                 \
  X(cuGetProcAddress_v2,         88, Cuda, LooksUp,   Other,        Count,   cuGetProcAddress_v2,  Dies,           \
      "cuGetProcAddress",        12000, false, "")                                                                 \
  /* CUDA: changes of the calling thread's current context (a context destroy pops one too) */ \
  X(cuCtxCreate,                 89, Cuda, SetsContext, Context,    Count,   cuCtxCreate,          Dies,           \
      "cuCtxCreate",             2000,  false, "")                                                                 \
  X(cuCtxCreate_v2,              90, Cuda, SetsContext, Context,    Count,   cuCtxCreate_v2,       Dies,           \
      "cuCtxCreate",             3020,  false, "")                                                                 \
  X(cuCtxCreate_v3,              91, Cuda, SetsContext, Context,    Count,   cuCtxCreate_v3,       Dies,           \
      "cuCtxCreate",             11040, false, "")                                                                 \
  X(cuCtxCreate_v4,              92, Cuda, SetsContext, Context,    Count,   cuCtxCreate_v4,       Dies,           \
      "cuCtxCreate",             12050, false, "")                                                                 \
  X(cuCtxSetCurrent,             93, Cuda, SetsContext, Context,    Count,   cuCtxSetCurrent,      Dies,           \
      "cuCtxSetCurrent",         4000,  false, "")                                                                 \
  X(cuCtxPushCurrent,            94, Cuda, SetsContext, Context,    Count,   cuCtxPushCurrent,     Dies,           \
      "cuCtxPushCurrent",        2000,  false, "")                                                                 \
  X(cuCtxPushCurrent_v2,         95, Cuda, SetsContext, Context,    Count,   cuCtxPushCurrent_v2,  Dies,           \
      "cuCtxPushCurrent",        4000,  false, "")                                                                 \
  X(cuCtxPopCurrent,             96, Cuda, SetsContext, Context,    Count,   cuCtxPopCurrent,      Dies,           \
      "cuCtxPopCurrent",         2000,  false, "")                                                                 \
  X(cuCtxPopCurrent_v2,          97, Cuda, SetsContext, Context,    Count,   cuCtxPopCurrent_v2,   Dies,           \
      "cuCtxPopCurrent",         4000,  false, "")                                                                 \
  /* CUDA: where modules' global variables (__device__, __constant__, __managed__) live */ \
  X(cuModuleGetGlobal_v2,        98, Cuda, LocatesGlobal, Other,    Count,   cuModuleGetGlobal_v2, Dies,           \
      "cuModuleGetGlobal",       3020,  false, "")                                                                 \
  X(cuLibraryGetGlobal,          99, Cuda, LocatesGlobal, Other,    Count,   cuLibraryGetGlobal,   Dies,           \
      "cuLibraryGetGlobal",      12000, false, "")                                                                 \
  X(cuLibraryGetManaged,        100, Cuda, LocatesGlobal, Other,    Count,   cuLibraryGetManaged,  Dies,           \
      "cuLibraryGetManaged",     12000, false, "")                                                                 \
  X(cuModuleUnload,             101, Cuda, UnloadsCode, Other,      Count,   cuModuleUnload,       Dies,           \
      "cuModuleUnload",          2000,  false, "")                                                                 \
  X(cuLibraryUnload,            102, Cuda, UnloadsCode, Other,      Count,   cuLibraryUnload,      Dies,           \
      "cuLibraryUnload",         12000, false, "")
// clang-format on

// clang-format off
enum class Api : uint16_t {
  Unknown = 0,
#define LG_API_ENUM(name, id, ...) name = id,
  LG_ENTRY_POINTS(LG_API_ENUM)
#undef LG_API_ENUM
  Count
};
// clang-format on

// One row of the table, as data.
struct EntryPoint {
  std::string_view name;
  Api api = Api::Unknown;
  Vendor vendor = Vendor::Cuda;
  Role role = Role::LooksUp;
  Family family = Family::Other;
  Kind kind = Kind::Count;
  Api release = Api::Unknown;
  AtContextEnd at_context_end = AtContextEnd::Outlives;
  std::string_view proc_family;
  int since = 0;
  bool per_thread = false;
  std::string_view what;
};

// clang-format off
inline constexpr EntryPoint kEntryPoints[] = {
#define LG_ENTRY_POINT_ROW(name, id, vendor, role, family, kind, release, at_context_end, proc_family, since, \
                           per_thread, what)                                                                   \
  {#name, Api::name, Vendor::vendor, Role::role, Family::family, Kind::kind, Api::release,                     \
   AtContextEnd::at_context_end, proc_family, since, per_thread, what},
    LG_ENTRY_POINTS(LG_ENTRY_POINT_ROW)
#undef LG_ENTRY_POINT_ROW
};
// clang-format on
inline constexpr size_t kEntryPointCount = sizeof kEntryPoints / sizeof kEntryPoints[0];

// The rows by id: kEntryPointOf[id] is the row's index, or kEntryPointCount for an id no row has.
inline constexpr auto kEntryPointOf = [] {
  std::array<size_t, static_cast<size_t>(Api::Count)> index{};
  for (size_t &at : index) at = kEntryPointCount;
  for (size_t i = 0; i < kEntryPointCount; ++i) index[static_cast<size_t>(kEntryPoints[i].api)] = i;
  return index;
}();

// The row of `api`; nullptr for Api::Unknown and ids no row has (a damaged journal's).
constexpr const EntryPoint *entry_point(Api api) noexcept {
  const auto id = static_cast<size_t>(api);
  return id < kEntryPointOf.size() && kEntryPointOf[id] < kEntryPointCount ? &kEntryPoints[kEntryPointOf[id]] : nullptr;
}

// A vendor's device-memory allocation and free of the current generation: what the C++ API
// allocates and frees with (api/backend.h), and what a record of an id no row has (from a
// damaged journal) is taken for. Indexed by Vendor.
inline constexpr Api kDeviceAlloc[] = {Api::cuMemAlloc_v2, Api::hipMalloc};
inline constexpr Api kDeviceFree[] = {Api::cuMemFree_v2, Api::hipFree};

// The driver's push and pop of the calling thread's current context: how a reclaim and the
// C++ API run a call in a given context (CUDA) and leave the thread's own current after it.
inline constexpr Api kPushContext = Api::cuCtxPushCurrent_v2;
inline constexpr Api kPopContext = Api::cuCtxPopCurrent_v2;

// The driver's unload of a module: how the C++ API gives back the code it loaded to launch.
inline constexpr Api kUnloadModule = Api::cuModuleUnload;

// The first row of `vendor` with `role` (Api::Unknown if none): a vendor's Unmaps, say.
constexpr Api first_with(Role role, Vendor vendor) noexcept {
  for (const EntryPoint &row : kEntryPoints)
    if (row.role == role && row.vendor == vendor) return row.api;
  return Api::Unknown;
}

namespace detail {
constexpr bool rows_are_consistent() {
  for (size_t i = 0; i < kEntryPointCount; ++i) {
    const EntryPoint &row = kEntryPoints[i];
    if (row.api == Api::Unknown || row.name.empty()) return false;
    for (size_t j = 0; j < i; ++j)
      if (kEntryPoints[j].api == row.api || kEntryPoints[j].name == row.name) return false;  // ids and names unique
    if (row.role == Role::Allocates) {
      // A kind for reports, and a release of its own family and vendor to reclaim it with.
      // By index, not through entry_point(): GCC's UBSan instruments a pointer's comparison
      // with null, which then is no constant expression.
      const size_t release_id = static_cast<size_t>(row.release);
      if (release_id >= kEntryPointOf.size() || kEntryPointOf[release_id] >= kEntryPointCount) return false;
      const EntryPoint &release = kEntryPoints[kEntryPointOf[release_id]];
      if (row.kind == Kind::Count || row.what.empty() || release.role != Role::Releases ||
          release.family != row.family || release.vendor != row.vendor)
        return false;
    } else if (row.kind != Kind::Count || !row.what.empty()) {
      return false;  // only allocations have a kind and a description
    }
    if (row.vendor == Vendor::Hip && (row.since != 0 || row.per_thread || row.proc_family != row.name)) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::rows_are_consistent(),
              "every entry point has a unique id and name; every allocating one a kind, a description, and a release "
              "of its own family and vendor");
static_assert(kEntryPoints[kEntryPointOf[static_cast<size_t>(kDeviceAlloc[0])]].release == kDeviceFree[0] &&
              kEntryPoints[kEntryPointOf[static_cast<size_t>(kDeviceAlloc[0])]].vendor == Vendor::Cuda &&
              kEntryPoints[kEntryPointOf[static_cast<size_t>(kDeviceAlloc[1])]].release == kDeviceFree[1] &&
              kEntryPoints[kEntryPointOf[static_cast<size_t>(kDeviceAlloc[1])]].vendor == Vendor::Hip);

}  // namespace leaseguard
