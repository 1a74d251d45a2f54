// Virtual memory management of the simulated driver.
//
// Physical memory is a memfd of the requested size; a reservation is a PROT_NONE range of
// address space; mapping puts the memfd's pages at an address in a reservation (MAP_SHARED,
// so two mappings of one handle see the same bytes), and cuMemSetAccess makes them
// accessible. As on the driver, physical memory goes back only when its last handle
// reference is released AND its last mapping is unmapped; a range is freed only once it is
// unmapped; unmap takes whole mappings. Sizes, offsets and addresses are multiples of the
// 2 MiB granularity the driver reports.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim_device.h"

namespace leaseguard::sim {
namespace {

bool granular(size_t value) { return value % SimDriver::kVmmGranularity == 0; }

int protection(CUmemAccess_flags flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: return PROT_READ | PROT_WRITE;
    case CU_MEM_ACCESS_FLAGS_PROT_READ: return PROT_READ;
    default: return PROT_NONE;
  }
}

}  // namespace

void SimDriver::release_physical_if_unused_locked(SimPhysical *physical) {
  if (physical->handles > 0 || physical->mappings > 0) return;
  close(physical->fd);
  if (physical->counted) refund_locked(physical->device, physical->size);
  delete physical;
}

CUresult SimDriver::vmm_create(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop) {
  if (handle == nullptr || prop == nullptr || size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  int device = -1;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: device = prop->location.id; break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: break;  // host memory: the id is not a device
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && (device < 0 || device >= device_count_))
    return CUDA_ERROR_INVALID_DEVICE;
  const bool counted = device >= 0;
  if (counted && !fits_locked(size)) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("leaseguard-sim-vmm", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto *physical = new SimPhysical;
  physical->size = size;
  physical->fd = fd;
  physical->device = device;
  physical->exportable = (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0;
  physical->counted = counted;
  physical->handles = 1;
  if (counted) charge_locked(device, size);
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(physical);
  physicals_[*handle] = physical;
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_release(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = physicals_.find(handle);
  if (it == physicals_.end()) return CUDA_ERROR_INVALID_VALUE;
  SimPhysical *physical = it->second;
  if (--physical->handles == 0) {
    physicals_.erase(it);
    release_physical_if_unused_locked(physical);
  }
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_reserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr hint) {
  if (ptr == nullptr || size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kVmmGranularity;
  if ((alignment & (alignment - 1)) != 0 || size + alignment < size) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  void *wanted = reinterpret_cast<void *>(hint);
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void *base = MAP_FAILED;
  if (hint != 0 && hint % alignment == 0) {
    base = mmap(wanted, size, PROT_NONE, flags, -1, 0);
    if (base != MAP_FAILED && base != wanted) {  // the hint is only a hint, as on the driver
      munmap(base, size);
      base = MAP_FAILED;
    }
  }
  if (base == MAP_FAILED) {
    // Over-reserve and trim to the alignment.
    void *raw = mmap(nullptr, size + alignment, PROT_NONE, flags, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    auto start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
    if (aligned > start) munmap(raw, aligned - start);
    uintptr_t end = start + size + alignment;
    if (end > aligned + size) munmap(reinterpret_cast<void *>(aligned + size), end - (aligned + size));
    base = reinterpret_cast<void *>(aligned);
  }
  *ptr = reinterpret_cast<CUdeviceptr>(base);
  reservations_[*ptr] = size;
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_free_range(CUdeviceptr ptr, size_t size) {
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = reservations_.find(ptr);
  if (it == reservations_.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto mapped = mappings_.lower_bound(ptr);
  if (mapped != mappings_.end() && mapped->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // still mapped
  munmap(reinterpret_cast<void *>(ptr), size);
  reservations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle) {
  if (ptr == 0 || size == 0 || !granular(size) || !granular(offset) || !granular(ptr)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto found = physicals_.find(handle);
  if (found == physicals_.end()) return CUDA_ERROR_INVALID_VALUE;
  SimPhysical *physical = found->second;
  if (offset > physical->size || size > physical->size - offset) return CUDA_ERROR_INVALID_VALUE;
  // Inside one reservation, over nothing mapped.
  auto reservation = reservations_.upper_bound(ptr);
  if (reservation == reservations_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --reservation;
  if (ptr + size > reservation->first + reservation->second) return CUDA_ERROR_INVALID_VALUE;
  auto next = mappings_.lower_bound(ptr);
  if (next != mappings_.end() && next->first < ptr + size) return CUDA_ERROR_ALREADY_MAPPED;
  if (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr)
    return CUDA_ERROR_ALREADY_MAPPED;
  void *at = mmap(reinterpret_cast<void *>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, physical->fd,
                  static_cast<off_t>(offset));
  if (at == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  mappings_[ptr] = SimMapping{size, offset, physical, false};
  ++physical->mappings;
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_unmap(CUdeviceptr ptr, size_t size) {
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  // The range must be whole mappings, back to back.
  auto first = mappings_.find(ptr);
  if (first == mappings_.end()) return CUDA_ERROR_INVALID_VALUE;
  auto last = first;
  uint64_t end = ptr;
  while (last != mappings_.end() && last->first == end && end < ptr + size) {
    end += last->second.size;
    ++last;
  }
  if (end != ptr + size) return CUDA_ERROR_INVALID_VALUE;
  for (auto it = first; it != last;) {
    // Back to reserved, inaccessible address space.
    (void)mmap(reinterpret_cast<void *>(it->first), it->second.size, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    SimPhysical *physical = it->second.physical;
    --physical->mappings;
    it = mappings_.erase(it);
    if (physical->handles == 0) release_physical_if_unused_locked(physical);
  }
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  if (ptr == 0 || size == 0 || desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= device_count_)
      return CUDA_ERROR_INVALID_DEVICE;
    prot |= protection(desc[i].flags);
  }
  // Every byte of the range must be mapped.
  auto it = mappings_.upper_bound(ptr);
  if (it == mappings_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  auto first = it;
  uint64_t covered = it->first;
  while (it != mappings_.end() && it->first == covered && covered < ptr + size) {
    covered += it->second.size;
    ++it;
  }
  if (first->first + first->second.size <= ptr || covered < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (mprotect(reinterpret_cast<void *>(ptr), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
  for (auto mapping = first; mapping != it; ++mapping) mapping->second.accessible = prot != PROT_NONE;
  return CUDA_SUCCESS;
}

bool SimDriver::vmm_range_accessible_locked(uint64_t address, size_t bytes) const {
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return false;
  --it;
  if (address >= it->first + it->second.size) return false;
  // Contiguous accessible mappings from the one holding `address` must cover the range.
  for (uint64_t covered = it->first; it != mappings_.end() && it->first == covered && it->second.accessible; ++it) {
    covered += it->second.size;
    if (covered - address >= bytes) return true;
  }
  return false;
}

CUresult SimDriver::vmm_retain(CUmemGenericAllocationHandle *handle, void *address) {
  if (handle == nullptr || address == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto at = reinterpret_cast<uint64_t>(address);
  auto it = mappings_.upper_bound(at);
  if (it == mappings_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (at >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  SimPhysical *physical = it->second.physical;
  ++physical->handles;
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(physical);
  physicals_[*handle] = physical;
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_export(void *shareable, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType type) {
  if (shareable == nullptr || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = physicals_.find(handle);
  if (it == physicals_.end() || !it->second->exportable) return CUDA_ERROR_INVALID_VALUE;
  int fd = dup(it->second->fd);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  *static_cast<int *>(shareable) = fd;
  return CUDA_SUCCESS;
}

CUresult SimDriver::vmm_import(CUmemGenericAllocationHandle *handle, void *os_handle, CUmemAllocationHandleType type) {
  if (handle == nullptr || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  struct stat status;
  if (fd < 0 || fstat(fd, &status) != 0 || status.st_size <= 0 || !granular(static_cast<size_t>(status.st_size)))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(driver_lock_);
  if (!initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the caller keeps (and closes) its descriptor
  if (own < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  auto *physical = new SimPhysical;
  physical->size = static_cast<size_t>(status.st_size);
  physical->fd = own;
  physical->device = 0;
  physical->exportable = true;
  physical->counted = false;  // the exporter's memory
  physical->handles = 1;
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(physical);
  physicals_[*handle] = physical;
  return CUDA_SUCCESS;
}

}  // namespace leaseguard::sim
