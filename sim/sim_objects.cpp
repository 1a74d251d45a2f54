// Arrays, IPC mappings, host registrations and external memory of the simulated driver.
//
// The semantics leaseguard depends on, as the driver has them: arrays, IPC mappings,
// registrations and mapped external buffers go with the context they were made in; an
// external memory object does not, and destroying it leaves its mapped buffers to be freed
// with cuMemFree. An IPC handle names the exporting process and allocation; opening it in
// that same process fails, as on the driver. The simulator cannot share another process's
// memory, so an opened mapping is zero-filled memory of the exported size: leak tracking
// needs its lifetime, not its bytes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "sim_device.h"

namespace leaseguard::sim {
namespace {

constexpr char kIpcMagic[8] = {'L', 'G', 'S', 'I', 'M', 'I', 'P', 'C'};

struct IpcHandleContents {
  char magic[8];
  int64_t pid;
  uint64_t address;
  uint64_t bytes;
};
static_assert(sizeof(IpcHandleContents) <= CU_IPC_HANDLE_SIZE);

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
size_t round_to_page(size_t value) { return (value + page_size() - 1) / page_size() * page_size(); }

}  // namespace

CUresult SimDriver::create_array(size_t bytes, bool mipmapped, void **out) {
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  SimContext *context = nullptr;
  if (CUresult status = checked_context_locked(&context); status != CUDA_SUCCESS) return status;
  if (!fits_locked(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  void *storage = std::calloc(1, bytes);
  if (storage == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  auto *array = new SimArray{bytes, context, mipmapped, storage};
  charge_locked(context->device, bytes);
  arrays_[array] = array;
  *out = array;
  return CUDA_SUCCESS;
}

CUresult SimDriver::destroy_array(void *handle, bool mipmapped) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = arrays_.find(handle);
  if (it == arrays_.end() || it->second->mipmapped != mipmapped) return CUDA_ERROR_INVALID_HANDLE;
  refund_locked(it->second->context->device, it->second->bytes);
  std::free(it->second->storage);
  delete it->second;
  arrays_.erase(it);
  return CUDA_SUCCESS;
}

CUresult SimDriver::ipc_get_handle(CUipcMemHandle *handle, CUdeviceptr address) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  const SimAllocation *exported = find_allocation_locked(address).allocation;
  if (exported == nullptr || (exported->kind != MemoryKind::Device && exported->kind != MemoryKind::Pitched))
    return CUDA_ERROR_INVALID_VALUE;
  IpcHandleContents contents{};
  std::memcpy(contents.magic, kIpcMagic, sizeof kIpcMagic);
  contents.pid = getpid();
  contents.address = address;
  contents.bytes = exported->bytes;
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &contents, sizeof contents);
  return CUDA_SUCCESS;
}

CUresult SimDriver::ipc_open(CUdeviceptr *address, const CUipcMemHandle &handle) {
  if (address == nullptr) return CUDA_ERROR_INVALID_VALUE;
  IpcHandleContents contents;
  std::memcpy(&contents, handle.reserved, sizeof contents);
  if (std::memcmp(contents.magic, kIpcMagic, sizeof kIpcMagic) != 0 || contents.bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (contents.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // the exporter cannot open its own
  std::lock_guard lock(driver_lock_);
  SimContext *context = nullptr;
  if (CUresult status = checked_context_locked(&context); status != CUDA_SUCCESS) return status;
  size_t reserved = round_to_page(contents.bytes);
  void *base = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  SimAllocation mapping;
  mapping.bytes = contents.bytes;
  mapping.reserved = reserved;
  mapping.context = context;
  mapping.kind = MemoryKind::Ipc;
  mapping.mapped = true;
  *address = reinterpret_cast<CUdeviceptr>(base);
  add_allocation_locked(DriverLock::own_shard(), *address, mapping);
  return CUDA_SUCCESS;
}

CUresult SimDriver::register_host(void *pointer, size_t bytes) {
  if (pointer == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  auto start = reinterpret_cast<uint64_t>(pointer);
  if (start + bytes < start) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  SimContext *context = nullptr;
  if (CUresult status = checked_context_locked(&context); status != CUDA_SUCCESS) return status;
  auto next = registrations_.lower_bound(start);
  if (next != registrations_.end() && next->first < start + bytes) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (next != registrations_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > start)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  registrations_[start] = SimRegistration{bytes, context};
  return CUDA_SUCCESS;
}

CUresult SimDriver::unregister_host(void *pointer) {
  if (pointer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (registrations_.erase(reinterpret_cast<uint64_t>(pointer)) == 0) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

CUresult SimDriver::import_external(CUexternalMemory *out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *desc) {
  if (out == nullptr || desc == nullptr || desc->size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (desc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) return CUDA_ERROR_NOT_SUPPORTED;
  if (desc->handle.fd < 0 || fcntl(desc->handle.fd, F_GETFD) < 0) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(driver_lock_);
  SimContext *context = nullptr;
  if (CUresult status = checked_context_locked(&context); status != CUDA_SUCCESS) return status;
  // The driver owns the descriptor from here on (it closes it when the object is destroyed).
  auto *memory = new SimExternalMemory{desc->handle.fd, static_cast<size_t>(desc->size)};
  external_[memory] = memory;
  *out = reinterpret_cast<CUexternalMemory>(memory);
  return CUDA_SUCCESS;
}

CUresult SimDriver::map_external_buffer(CUdeviceptr *address, CUexternalMemory handle,
                                        const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *desc) {
  if (address == nullptr || desc == nullptr || desc->size == 0 || desc->flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  SimContext *context = nullptr;
  if (CUresult status = checked_context_locked(&context); status != CUDA_SUCCESS) return status;
  auto it = external_.find(handle);
  if (it == external_.end()) return CUDA_ERROR_INVALID_HANDLE;
  SimExternalMemory *memory = it->second;
  if (desc->offset > memory->size || desc->size > memory->size - desc->offset) return CUDA_ERROR_INVALID_VALUE;
  size_t reserved = round_to_page(desc->size);
  void *base = MAP_FAILED;
  if (desc->offset % page_size() == 0)  // the imported object's own bytes where it can be mapped
    base = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_SHARED, memory->fd, static_cast<off_t>(desc->offset));
  if (base == MAP_FAILED)
    base = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  SimAllocation buffer;
  buffer.bytes = desc->size;
  buffer.reserved = reserved;
  buffer.context = context;
  buffer.kind = MemoryKind::ExternalBuffer;
  buffer.mapped = true;
  *address = reinterpret_cast<CUdeviceptr>(base);
  add_allocation_locked(DriverLock::own_shard(), *address, buffer);
  return CUDA_SUCCESS;
}

CUresult SimDriver::destroy_external(CUexternalMemory handle) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = external_.find(handle);
  if (it == external_.end()) return CUDA_ERROR_INVALID_HANDLE;
  close(it->second->fd);  // mapped buffers stay until cuMemFree, as on the driver
  delete it->second;
  external_.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace leaseguard::sim
