// Libraries loaded from device code or simulator module images (see sim_libraries.h).
#include "sim_libraries.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "sim_device.h"

namespace leaseguard::sim {
namespace {

// Lock order: this, then the driver's (a variable's memory is allocated holding it).
std::mutex g_libraries_mutex;
std::set<const SimLibrary *> &libraries() {
  static auto *live = new std::set<const SimLibrary *>;  // never destroyed: late unloads at exit
  return *live;
}
std::set<const LibraryKernel *> &library_kernels() {
  static auto *live = new std::set<const LibraryKernel *>;  // kernels outlive their library's unload
  return *live;
}

bool live(const SimLibrary *library) { return libraries().count(library) != 0; }

// Whether `address` is still the variable memory a library was given in `context` (a
// destroyed context took it with it, and the address may since have gone to another).
bool still_owned(uint64_t address, CUcontext context) {
  SimDriver::PointerInfo info;
  return SimDriver::instance().describe(address, &info) == CUDA_SUCCESS && info.base == address &&
         info.kind == MemoryKind::Module && reinterpret_cast<CUcontext>(info.context) == context;
}

}  // namespace

CUresult load_library(const void *image, SimLibrary **out) {
  auto library = std::make_unique<SimLibrary>();
  switch (read_device_code(image, library->code)) {
    case DeviceCodeStatus::Read: break;
    case DeviceCodeStatus::Corrupt: return CUDA_ERROR_INVALID_IMAGE;
    case DeviceCodeStatus::NoBinaryForGpu: return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case DeviceCodeStatus::NotCode:
      library->stand_ins = load_module(image);
      if (library->stand_ins == nullptr) return CUDA_ERROR_INVALID_IMAGE;
      break;
  }
  if (!library->code.ptx.empty()) {
    ptx::DecodeResult decoded = ptx::decode(library->code.ptx);
    library->program = std::move(decoded.program);
    library->ptx_error = decoded.error;
  }
  std::lock_guard lock(g_libraries_mutex);
  *out = library.release();
  libraries().insert(*out);
  return CUDA_SUCCESS;
}

bool unload_library(SimLibrary *library) {
  {
    std::lock_guard lock(g_libraries_mutex);
    if (libraries().erase(library) == 0) return false;
  }
  // Its variables' memory, in every context still alive (a destroyed context took its own).
  for (const auto &[owner, address] : library->variable_memory)
    if (still_owned(address, owner.first)) (void)SimDriver::instance().release(address, {MemoryKind::Module});
  for (const auto &[name, address] : library->managed_memory)
    (void)SimDriver::instance().release(address, {MemoryKind::Managed});
  if (library->stand_ins != nullptr) unload_module(library->stand_ins);
  delete library;  // its kernels stay valid handles that fail to launch (a real driver's stay too)
  return true;
}

bool library_valid(const SimLibrary *library) {
  std::lock_guard lock(g_libraries_mutex);
  return live(library);
}

CUresult library_kernel(SimLibrary *library, const char *name, LibraryKernel **out) {
  std::lock_guard lock(g_libraries_mutex);
  if (!live(library)) return CUDA_ERROR_INVALID_HANDLE;
  for (LibraryKernel *kernel : library->kernels)
    if (kernel->name == name) {
      *out = kernel;
      return CUDA_SUCCESS;
    }
  const SimKernel *stand_in = nullptr;
  if (library->stand_ins != nullptr) {
    stand_in = find_kernel(library->stand_ins, name);
    if (stand_in == nullptr) return CUDA_ERROR_NOT_FOUND;
  } else {
    if (library->code.kernels.count(name) == 0) return CUDA_ERROR_NOT_FOUND;
    stand_in = stand_in_for(name);
  }
  const ptx::Kernel *device_code = nullptr;
  if (library->program != nullptr) {
    const auto found = library->program->kernels.find(name);
    if (found != library->program->kernels.end()) device_code = &found->second;
  }
  auto *kernel = new LibraryKernel{name, stand_in, device_code, library};
  library->kernels.push_back(kernel);
  library_kernels().insert(kernel);
  *out = kernel;
  return CUDA_SUCCESS;
}

CUresult library_variable(SimLibrary *library, const char *name, uint64_t *address, size_t *size, bool managed_only) {
  SimDriver &driver = SimDriver::instance();
  std::lock_guard lock(g_libraries_mutex);
  if (!live(library)) return CUDA_ERROR_INVALID_HANDLE;
  const auto found = library->code.variables.find(name);
  if (found == library->code.variables.end() || (managed_only && !found->second.managed)) return CUDA_ERROR_NOT_FOUND;
  const DeviceVariable &variable = found->second;
  const size_t bytes = std::max<size_t>(variable.size, 1);
  if (variable.managed) {
    // Unified memory, one copy for the process, there before any context (the runtime asks
    // for it at registration): memory of no context, freed at the unload.
    uint64_t &memory = library->managed_memory[name];
    if (memory == 0) {
      const CUresult status = driver.allocate_unowned(bytes, MemoryKind::Managed, &memory);
      if (status != CUDA_SUCCESS) {
        library->managed_memory.erase(name);
        return status;
      }
      std::memset(reinterpret_cast<void *>(memory), 0, bytes);
      std::memcpy(reinterpret_cast<void *>(memory), variable.initial.data(), std::min(variable.initial.size(), bytes));
    }
    *address = memory;
    *size = variable.size;
    return CUDA_SUCCESS;
  }
  const CUcontext context = driver.current();
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  uint64_t &memory = library->variable_memory[{context, name}];
  // A destroyed context took the memory with it; a new context under the same handle gets its own.
  if (memory == 0 || !still_owned(memory, context)) {
    const CUresult status = driver.allocate(bytes, MemoryKind::Module, &memory);
    if (status != CUDA_SUCCESS) {
      library->variable_memory.erase({context, name});
      return status;
    }
    std::memset(reinterpret_cast<void *>(memory), 0, bytes);
    std::memcpy(reinterpret_cast<void *>(memory), variable.initial.data(), std::min(variable.initial.size(), bytes));
  }
  *address = memory;
  *size = variable.size;
  return CUDA_SUCCESS;
}

const LibraryKernel *as_library_kernel(const void *handle) {
  std::lock_guard lock(g_libraries_mutex);
  const auto *kernel = static_cast<const LibraryKernel *>(handle);
  return library_kernels().count(kernel) != 0 ? kernel : nullptr;
}

}  // namespace leaseguard::sim
